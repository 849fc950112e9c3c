"""The figures ``doctable plan`` rests on: each a value, what it is and its published source (AWS pricing pages
and developer guides), read by name with :func:`value`. Data only, so a figure is changed in one place."""

from __future__ import annotations

# (value, what it is, where it comes from)
ASSUMPTIONS: dict[str, tuple[float, str, str]] = {
    "partition_wcu": (
        1000,
        "write units per second one table partition (so one stream shard) takes: ~1,000 WCU/s or 1 MB/s",
        "DynamoDB developer guide, 'Partitions and data distribution' / 'Burst and adaptive capacity'",
    ),
    "polls_per_second": (
        4,
        "Lambda polls each stream shard four times a second (one batch per poll per concurrent batch)",
        "Lambda developer guide, 'Using AWS Lambda with Amazon DynamoDB' (polling and batching)",
    ),
    "s3_delete_per_prefix": (
        3500,
        "DELETE requests per second per partitioned prefix (each DeleteObjects key counts as one)",
        "Amazon S3 user guide, 'Performance guidelines for Amazon S3'",
    ),
    "s3_get_per_prefix": (
        5500,
        "GET/HEAD requests per second per partitioned prefix",
        "Amazon S3 user guide, 'Performance guidelines for Amazon S3'",
    ),
    "s3_latency_s": (
        0.150,
        "seconds per S3 request (the middle of S3's 'roughly 100-200 ms' for small objects)",
        "'Best practices design patterns: optimizing Amazon S3 performance' (AWS whitepaper)",
    ),
    "dynamodb_latency_s": (
        0.005,
        "seconds per DynamoDB request ('single-digit millisecond')",
        "Amazon DynamoDB developer guide, 'What is Amazon DynamoDB?'",
    ),
    "cpu_s_per_key": (
        0.002,
        "consumer CPU seconds per dropped key on one full vCPU (botocore's HEAD dominates)",
        "this project's `make bench` (in-memory store), bench/results.json",
    ),
    "cpu_s_per_key_unguarded": (
        0.00015,
        "consumer CPU seconds per dropped key with blob_key_reuse=never (no HEAD: parsing and DeleteObjects)",
        "this project's `make bench` (in-memory store), bench/results.json",
    ),
    "cpu_s_per_key_manifest": (
        0.00027,
        "consumer CPU seconds per dropped key listed with its ETag (guarded, no HEAD: the batch's parsing, the "
        "live-item read and a conditional DeleteObjects; 24 ms a batch of 100 records dropping 90 keys)",
        "this project's `make bench` full-shard replay, bench/results.json fullshard_batch_seconds",
    ),
    "lambda_full_vcpu_mb": (
        1769,
        "memory (MB) at which a function has one full vCPU; CPU scales with memory",
        "Lambda developer guide, 'Configure Lambda function memory'",
    ),
    "observe_concurrency": (
        64,
        "HEAD requests the consumer keeps in flight",
        "functions/stream_consumer/constants.py OBSERVE_CONCURRENCY",
    ),
    "price_ddb_write_per_m": (
        0.625,
        "USD per million on-demand write request units (1 KB each), us-east-1",
        "aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "price_ddb_storage_gb_month": (
        0.25,
        "USD per GB-month of table and index storage (standard table class), us-east-1",
        "aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "index_item_overhead_bytes": (
        100,
        "bytes DynamoDB adds to each item and each index entry for storage and for its write's size",
        "DynamoDB developer guide, 'Item sizes and formats' and 'Provisioned throughput considerations for GSIs'",
    ),
    "price_ddb_read_per_m": (
        0.125,
        "USD per million on-demand read request units (4 KB strongly consistent), us-east-1",
        "aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "price_lambda_requests_per_m": (
        0.20,
        "USD per million Lambda requests",
        "aws.amazon.com/lambda/pricing/",
    ),
    "price_lambda_gbs_arm64": (
        0.0000133334,
        "USD per GB-second, arm64 (first tier)",
        "aws.amazon.com/lambda/pricing/",
    ),
    "price_lambda_gbs_x86_64": (
        0.0000166667,
        "USD per GB-second, x86_64 (first tier)",
        "aws.amazon.com/lambda/pricing/",
    ),
    "price_snapstart_cache_gbs": (
        0.0000015046,
        "USD per GB-second a SnapStart snapshot is cached (each existing published version; at least 3 hours)",
        "aws.amazon.com/lambda/pricing/ (SnapStart, Python)",
    ),
    "price_snapstart_restore_gb": (
        0.0001397998,
        "USD per GB restored from a SnapStart snapshot (each new execution environment)",
        "aws.amazon.com/lambda/pricing/ (SnapStart, Python)",
    ),
    "price_s3_get_per_k": (
        0.0004,
        "USD per 1,000 GET-class requests (HEAD), S3 Standard",
        "aws.amazon.com/s3/pricing/",
    ),
    "price_s3_list_per_k": (
        0.005,
        "USD per 1,000 PUT/COPY/POST/LIST requests, S3 Standard",
        "aws.amazon.com/s3/pricing/",
    ),
    "price_kms_key_month": (
        1.0,
        "USD per customer managed KMS key per month",
        "aws.amazon.com/kms/pricing/",
    ),
    # Kinesis Data Streams for DynamoDB (kinesis=on|<ARN>) and a mapping reading it (consumer_source=kinesis).
    "price_cdc_per_m": (
        0.10,
        "USD per million change data capture units for Kinesis Data Streams (one per write of up to 1 KB)",
        "aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "price_kinesis_stream_hour": (
        0.04,
        "USD per stream-hour of an on-demand Kinesis data stream, us-east-1",
        "aws.amazon.com/kinesis/data-streams/pricing/",
    ),
    "price_kinesis_ingest_gb": (
        0.08,
        "USD per GB ingested into an on-demand stream (each record rounded up to 1 KB), us-east-1",
        "aws.amazon.com/kinesis/data-streams/pricing/",
    ),
    "price_kinesis_retrieval_gb": (
        0.04,
        "USD per GB retrieved from an on-demand stream by a shared-throughput reader (a mapping), us-east-1",
        "aws.amazon.com/kinesis/data-streams/pricing/",
    ),
    "kinesis_record_kb_per_item_kb": (
        2,
        "KB of Kinesis record per KB of item: a change record carries the old and the new image",
        "DynamoDB developer guide, 'Change data capture for Kinesis Data Streams' (record contents)",
    ),
    "kinesis_on_demand_shards": (
        4,
        "shards an on-demand stream starts with (4 MB/s, 4,000 records/s of writes; it scales to twice the "
        "peak of the last 30 days)",
        "Kinesis Data Streams developer guide, 'Choose the data stream capacity mode' (on-demand mode)",
    ),
    "kinesis_shard_write_kb": (
        1000,
        "KB per second one shard ingests (and at most 1,000 records per second)",
        "Kinesis Data Streams developer guide, 'Quotas and limits'",
    ),
    "kinesis_polls_per_second": (
        1,
        "Lambda polls each Kinesis shard once a second (standard iterator), one batch per poll per concurrent "
        "batch",
        "Lambda developer guide, 'Using Lambda with Kinesis Data Streams' (polling and batching)",
    ),
    "kinesis_getrecords_per_shard": (
        5,
        "GetRecords calls per second per shard (and 2 MB/s), shared by every shared-throughput reader",
        "Kinesis Data Streams developer guide, 'Quotas and limits'",
    ),
    # Global tables (replicas) and the per-region default quotas plan checks for every table.
    "price_ddb_replicated_write_per_m": (
        0.625,
        "USD per million on-demand replicated write request units (each replica region's copy of a write), "
        "us-east-1; since November 2024 the same as a single-region write",
        "aws.amazon.com/dynamodb/pricing/on-demand/ (Global tables)",
    ),
    "price_transfer_inter_region_gb": (
        0.02,
        "USD per GB sent from us-east-1 to another region (a global table's replication traffic)",
        "aws.amazon.com/dynamodb/pricing/on-demand/ (Data transfer) and aws.amazon.com/ec2/pricing/on-demand/ "
        "(data transfer to other AWS regions)",
    ),
    "cpu_s_per_record_proof": (
        0.00015,
        "consumer CPU seconds per record when it deletes nothing (a replica region's consumer parses, logs and "
        "counts): bounded by the per-key cost of blob_key_reuse=never, which also sends DeleteObjects",
        "this project's `make bench` (in-memory store), bench/results.json",
    ),
    "quota_table_write_units": (
        40000,
        "on-demand write request units per second per table, per region (default; raised on request)",
        "DynamoDB developer guide, 'Quotas in Amazon DynamoDB' (Read/write throughput)",
    ),
    "quota_table_read_units": (
        40000,
        "on-demand read request units per second per table, per region (default; raised on request)",
        "DynamoDB developer guide, 'Quotas in Amazon DynamoDB' (Read/write throughput)",
    ),
    "quota_lambda_concurrency": (
        1000,
        "concurrent Lambda executions per account per region (default; raised on request)",
        "Lambda developer guide, 'Lambda quotas' (Concurrent executions)",
    ),
    "quota_stream_readers_per_shard": (
        2,
        "processes reading one DynamoDB stream shard at the same time before GetRecords is throttled",
        "DynamoDB Streams API reference, LimitExceededException; DynamoDB developer guide, 'Quotas in Amazon "
        "DynamoDB' (DynamoDB Streams)",
    ),
    "quota_global_stream_readers_per_shard": (
        1,
        "processes reading one stream shard of a global table's replica at the same time (AWS recommends one, "
        "to avoid throttling)",
        "DynamoDB developer guide, 'Quotas in Amazon DynamoDB' (DynamoDB Streams: global tables)",
    ),
}


HOURS_PER_MONTH = 730  # AWS pricing pages' month


def value(name: str) -> float:
    return ASSUMPTIONS[name][0]
