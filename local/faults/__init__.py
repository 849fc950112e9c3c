"""Fault injection for the local AWS, switched on per test through an HTTP control endpoint.

Nothing is injected until a spec is posted; ``DELETE`` switches everything off again. ``spec`` validates a
posted spec, holds the server's rules and counters and the hooks local/runtime/runner.py and
local/pollers/streams.py call; ``middleware`` is the WSGI middleware (installed by local/server/__init__.py)
serving the control endpoint and intercepting S3 DeleteObjects; ``client`` (``FaultClient``) uses only the standard library.

Control endpoint, on the local AWS itself::

    POST   /_doctable/faults   {"seed": 7, "rules": [RULE, ...]}   replace the rules (counts are kept)
    GET    /_doctable/faults   rules, counts per rule, the last injections (``?events=N``, default 20; at
                               most 2,000 are kept), and every stream mapping's progress (checkpoint,
                               shard end, ``pending`` records: 0 when it has delivered everything)
    DELETE /_doctable/faults   no rules, counts and injections forgotten

A RULE is a JSON object: ``id`` (optional, default ``<on>#<index>``), ``on`` (what it intercepts), ``action``,
``rate`` (probability, 0..1, default 1), ``limit`` (at most this many injections; default unlimited) and::

    on: "s3:DeleteObjects"   (the request as it reaches the server over HTTP: the consumer's own call)
        action "slowdown"        503 SlowDown, the throttling answer (the SDK retries it)
               "internal-error"  500 InternalError (the SDK retries it)
               "access-denied"   403 AccessDenied for the whole request (the SDK does NOT retry it)
               "key-errors"      200, but some keys come back in <Error> (not deleted; the SDK does NOT retry)
               "delay"           hold the request ``delay_ms`` before serving it
        bucket      only requests to this bucket
        match       a glob on the keys (``fixable-*``): the request is eligible only when a key matches,
                    and only matching keys fail ("key-errors")
        keys        "key-errors": how many keys of an affected request fail (an int, or "all"; default 1)
        code        "key-errors": the per-key error code (default "InternalError")
        phase       whole-request errors: "before" (nothing deleted, default) or "after" (the keys were deleted,
                    but for those a key-errors rule fails, then the error is returned: an answer that was lost)
    on: "lambda:Invoke"      (one invocation of a function by the local runner)
        action "crash"           kill the execution environment ``after_ms`` into the invocation:
                                 "Runtime exited with error: signal: killed" (Runtime.ExitError)
               "timeout"         the same kill, reported as "Task timed out" (status timeout)
        function    only this function (its name, or a substring of it)
        after_ms    milliseconds, an int or [low, high] drawn uniformly (default [0, 100]); an invocation that
                    returns first is not affected (and not counted)
    on: "esm:Deliver"        (one batch delivered by a stream mapping)
        action "duplicate"       after the function processed the batch (no function error), deliver the same
                                 batch again (the first checkpoint was "lost"); the second result counts
        mapping     only this mapping UUID

Each rule draws from its own ``random.Random(f"{seed}:{id}")``: a run is reproducible for a given order of
requests, and adding a rule does not change the draws of the others.
"""
