"""doctable's wrapper around a team's stream handler: the deployed handler of every subscriber's function.

It logs the batch's proof line (``stream_records_received``, with the subscriber's name), emits the batch's metrics,
then calls the team's function with the batch as Lambda sends it, or once per record (docs: contract/subscribers.py).
"""
