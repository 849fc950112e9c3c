"""The constructs that hold data: the table (its spec, the global table, the handover), the Kinesis
destination, the buckets and the encryption keys.
"""
