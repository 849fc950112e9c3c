"""What every command stands on: the run's context and plumbing, AWS access and its errors, rendering, the ledger's store."""
