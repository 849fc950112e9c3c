"""Table-change consumer (DynamoDB stream or Kinesis): deletes the S3 blobs deleted or modified items no longer own.

Entry point: ``stream_consumer.handler.lambda_handler``.
"""
