"""Cold-start child (run as a script by ``bench.coldstart``): import one handler module, handle one batch.

Prints one line ``BENCH_RESULT {...}`` on stderr (stdout belongs to the handler's logs) with the time spent
importing the module and in the first invocation, both measured in this fresh process. Nothing is imported
before the handler's module except what the interpreter has already loaded at start-up.

With ``--snapshot`` (the model of a SnapStart restore): the module is imported (the init, which Lambda runs when
it publishes the version), then the process forks and the child, a copy of the initialized memory as a restored
snapshot is, handles the batch; ``since_restore_s`` runs from the fork to the response and ``cpu_s`` is the
child's alone. Lambda's own restore (loading the snapshot into a microVM) is not in it.
"""

import sys
import time

_t0 = time.perf_counter()


def main() -> int:
    module_name, task_root, event_path = sys.argv[1], sys.argv[2], sys.argv[3]
    snapshot = sys.argv[4:] == ["--snapshot"]
    sys.path[0] = task_root  # instead of the script's own directory (bench/): as /var/task on Lambda
    with open(event_path, "rb") as handle:
        raw = handle.read()
    t_import = time.perf_counter()
    import importlib

    module = importlib.import_module(module_name)
    t_invoke = time.perf_counter()
    import json as _json  # the floor imports it anyway; for the others it is already loaded or trivial

    event = _json.loads(raw)
    if snapshot:
        return _restored(module, event)
    t_invoke_start = time.perf_counter()
    response = module.lambda_handler(event, _Context())
    t_done = time.perf_counter()
    cpu = (
        time.process_time()
    )  # CPU (user + sys) of this process since it started, interpreter start-up included
    result = {
        "import_s": t_invoke - t_import,
        "invoke_s": t_done - t_invoke_start,
        "init_and_invoke_s": (t_invoke - t_import) + (t_done - t_invoke_start),
        "since_script_start_s": t_done - _t0,
        "cpu_s": cpu,
        "modules_loaded": len(sys.modules),
        "response": response,
    }
    sys.stdout.flush()
    sys.stderr.write("BENCH_RESULT " + _json.dumps(result) + "\n")
    sys.stderr.flush()
    return 0


def _restored(module: object, event: object) -> int:
    """Fork (the restore), handle the batch in the child, report from there; the parent waits and exits."""
    import json
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    t_restored = time.perf_counter()
    response = module.lambda_handler(event, _Context())  # type: ignore[attr-defined]
    t_done = time.perf_counter()
    result = {
        "import_s": 0.0,
        "invoke_s": t_done - t_restored,
        "init_and_invoke_s": t_done - t_restored,
        "since_restore_s": t_done - t_restored,
        "cpu_s": time.process_time(),
        "modules_loaded": len(sys.modules),
        "response": response,
    }
    sys.stdout.flush()
    sys.stderr.write("BENCH_RESULT " + json.dumps(result) + "\n")
    sys.stderr.flush()
    os._exit(0)


class _Context:
    function_name = "doctable-bench-StreamConsumer"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:doctable-bench-StreamConsumer"
    aws_request_id = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name = "/aws/lambda/doctable-bench-StreamConsumer"
    log_stream_name = "2024/05/01/[$LATEST]abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


if __name__ == "__main__":
    import os

    profile_path = os.environ.get("BENCH_PROFILE")  # investigation aid: cProfile the import + invocation
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        code = profiler.runcall(main)
        profiler.dump_stats(profile_path)
        sys.exit(code)
    sys.exit(main())
