"""The operations commands: ``doctable verify | ledger | preflight | teardown | replay``, one module each
(``verify`` is a package). Each works the same against real AWS (the default credential chain) and the local
AWS (``AWS_ENDPOINT_URL``); knobs resolve exactly as the CDK app resolves them."""
