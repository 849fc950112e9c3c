"""The constructs that run code: the cleanup consumer's function and mapping, and the subscribers'."""
