"""Benchmarks of the stream consumer against a documented-Powertools baseline: ``python -m bench`` / ``make bench``.

Kept import-light on purpose: the cold-start child imports ``bench.baseline_consumer.handler`` through this
package, so nothing here may add to the baseline's measured import time.
"""
