"""DynamoDB-stream consumer: deletes the S3 blobs that deleted or modified table items no longer own.

Entry point: ``stream_consumer.handler.lambda_handler``.
"""
