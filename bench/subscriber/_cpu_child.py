"""CPU child (run as a script by ``bench.subscriber``): import one handler module from a task root, handle a
batch once (warm), then the same batch ``rounds`` times twice: the handler called with the decoded event
(``cpu_s``), and as Lambda's Python runtime (awslambdaric) calls it, decoding the invocation's JSON body and
encoding the response (``runtime_cpu_s``). Prints ``BENCH_RESULT {...}`` on stderr with the CPU (user + sys) of
those rounds. stdout (the handlers' log lines) goes to /dev/null, as the parent sets it."""

import sys
import time


def main() -> int:
    module_name, task_root, event_path, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sys.path[0] = task_root
    import importlib
    import json

    with open(event_path, "rb") as handle:
        body = handle.read()
    event = json.loads(body)
    module = importlib.import_module(module_name)
    handler, context = module.lambda_handler, _Context()
    response = handler(event, context)
    started = time.process_time()
    for _ in range(rounds):
        handler(event, context)
    cpu = time.process_time() - started
    started = time.process_time()
    for _ in range(rounds):
        json.dumps(handler(json.loads(body), context))
    runtime_cpu = time.process_time() - started
    result = {
        "cpu_s": cpu,
        "runtime_cpu_s": runtime_cpu,
        "rounds": rounds,
        "records": len(event["Records"]),
        "response": response,
    }
    sys.stdout.flush()
    sys.stderr.write("BENCH_RESULT " + json.dumps(result) + "\n")
    return 0


class _Context:
    function_name = "doctable-bench-Subscriber"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:doctable-bench-Subscriber"
    aws_request_id = "52fdfc07-2182-154f-163f-5f0f9a621d72"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


if __name__ == "__main__":
    sys.exit(main())
