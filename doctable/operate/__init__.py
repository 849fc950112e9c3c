"""The day-to-day commands: logs, invoke, watch, replay, settings, policy, ledger, and the demo."""
