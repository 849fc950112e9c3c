"""``doctable verify``: the acceptance contract against one deployed environment.

``expect`` derives what the knobs promise (from ``contract.shape``), ``checks`` observes it (one row per
check), ``proof`` finds the consumer's record-level evidence, ``command``
is the console-script entry. A run's rows and record (kept for the ledger too) are ``record``.
"""
