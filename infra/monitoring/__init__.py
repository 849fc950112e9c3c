"""The constructs that watch: the alarms and the dashboard."""
