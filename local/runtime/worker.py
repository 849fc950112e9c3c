"""The Lambda execution environment's in-process part: runs in a subprocess started by ``local.runtime.runner``.

Started as ``python -u -I -S runtime/worker.py`` (no site-packages: the import path is exactly what a Lambda
execution environment would have, given in DOCTABLE_WORKER_PATH). It imports the handler once (the init phase),
then serves invocations: one JSON request per line on a private copy of stdin, the handler's output goes to
stdout/stderr (both the same pipe, read by the parent as log lines), and each result is written to stdout as a
line that starts with the record separator ``\\x1e`` so the parent can tell it from the function's own output.
Standard library only: this file must import nothing from the project or the venv.
"""

import importlib
import json
import os
import sys
import time
import traceback

MARK = "\x1e"


def _emit(kind, payload):
    sys.stderr.flush()
    sys.stdout.write("\n" + MARK + kind + " " + json.dumps(payload, default=str) + "\n")
    sys.stdout.flush()


class LambdaContext:
    """The attributes and method a Python Lambda handler's ``context`` has."""

    def __init__(self, request, env):
        self.aws_request_id = request["id"]
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = request.get("invoked_arn")
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.identity = None
        self.client_context = None
        self.tenant_id = None
        self._deadline_ms = request["deadline_ms"]

    def get_remaining_time_in_millis(self):
        return max(int(self._deadline_ms - time.time() * 1000), 0)

    def __repr__(self):
        return (
            f"LambdaContext([aws_request_id={self.aws_request_id},log_group_name={self.log_group_name},"
            f"log_stream_name={self.log_stream_name},function_name={self.function_name},"
            f"memory_limit_in_mb={self.memory_limit_in_mb},function_version={self.function_version},"
            f"invoked_function_arn={self.invoked_function_arn},client_context=None,identity=None])"
        )


def _error_payload(exc, kind=None):
    tb = traceback.extract_tb(exc.__traceback__)
    return {
        "errorMessage": str(exc),
        "errorType": kind or type(exc).__name__,
        "requestId": "",
        "stackTrace": traceback.format_list(tb),
    }


def _log_error(payload):
    # One log event, as the Python runtime writes it (lines joined by carriage returns).
    lines = [
        f"[ERROR] {payload['errorType']}: {payload['errorMessage']}",
        "Traceback (most recent call last):",
    ]
    lines += [frame.rstrip("\n") for frame in payload.get("stackTrace", [])]
    sys.stdout.write("\r".join(lines).replace("\n", "\r") + "\n")


def _load_handler(spec):
    module_name, _, function_name = spec.rpartition(".")
    if not module_name:
        raise ValueError(f"Bad handler '{spec}': not enough values to unpack (expected 2, got 1)")
    try:
        module = importlib.import_module(module_name.replace("/", "."))
    except ImportError as exc:
        err = _error_payload(exc, "Runtime.ImportModuleError")
        err["errorMessage"] = f"Unable to import module '{module_name}': {exc}"
        return None, err
    except Exception as exc:  # an error at import time is the init phase failing
        err = _error_payload(exc, "Runtime.UserCodeSyntaxError" if isinstance(exc, SyntaxError) else None)
        return None, err
    handler = getattr(module, function_name, None)
    if handler is None:
        return None, {
            "errorMessage": f"Handler '{function_name}' missing on module '{module_name}'",
            "errorType": "Runtime.HandlerNotFound",
            "requestId": "",
            "stackTrace": [],
        }
    return handler, None


def main():
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    extra_path = [p for p in os.environ.pop("DOCTABLE_WORKER_PATH", "").split(os.pathsep) if p]
    sys.path[:0] = extra_path
    task_root = os.environ.get("LAMBDA_TASK_ROOT", os.getcwd())
    os.chdir(task_root)

    started = time.time()
    handler, init_error = _load_handler(os.environ.get("_HANDLER", ""))
    if init_error:
        _log_error(init_error)
    _emit("READY", {"init_ms": (time.time() - started) * 1000, "error": init_error})

    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        os.environ["_X_AMZN_TRACE_ID"] = request.get("trace_id", "")
        os.environ["AWS_LAMBDA_LOG_STREAM_NAME"] = request.get("log_stream", "")
        if init_error:
            _emit("RESULT", {"id": request["id"], "error": init_error})
            continue
        context = LambdaContext(request, os.environ)
        try:
            result = handler(request["event"], context)
            try:
                body = json.dumps(result)
            except (TypeError, ValueError) as exc:
                error = _error_payload(exc, "Runtime.MarshalError")
                error["errorMessage"] = f"Unable to marshal response: {exc}"
                _log_error(error)
                _emit("RESULT", {"id": request["id"], "error": error})
                continue
            _emit("RESULT", {"id": request["id"], "body": body})
        except SystemExit as exc:
            sys.stdout.flush()
            raise SystemExit(exc.code if exc.code is not None else 0) from None
        except BaseException as exc:  # noqa: BLE001 - the runtime reports whatever the handler raised
            error = _error_payload(exc)
            error["requestId"] = request["id"]
            sys.stdout.write(
                "LAMBDA_WARNING: Unhandled exception. The most likely cause is an issue in the function code. "
                "However, in rare cases, a Lambda runtime update can cause unexpected function behavior. "
                "For functions using managed runtimes, runtime updates can be triggered by a function change, "
                "or can be applied automatically. To determine if the runtime has been updated, check the runtime "
                "version in the INIT_START log entry. If this error correlates with a change in the runtime "
                "version, you may be able to mitigate this error by temporarily rolling back to the previous "
                "runtime version. For more information, see "
                "https://docs.aws.amazon.com/lambda/latest/dg/runtimes-update.html\n"
            )
            _log_error(error)
            _emit("RESULT", {"id": request["id"], "error": error})


if __name__ == "__main__":
    main()
