"""What runs programs for the app and the operations: the pinned Node.js and CDK CLI (toolchain), the
subscribers' wheelhouse (pip) and the staging of the functions' assets. Reads contract/; the constructs (infra/)
and the operations (doctable/) use it.
"""
