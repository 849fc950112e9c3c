"""Lambda without Docker: the runner, its worker process and the metrics a function produces."""
