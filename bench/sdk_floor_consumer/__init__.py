"""The SDK floor of a cold start (bench only)."""
