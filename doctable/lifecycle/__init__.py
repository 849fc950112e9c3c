"""Changing an environment: the guarded deploy and its steps, preflight, reconcile, teardown."""
