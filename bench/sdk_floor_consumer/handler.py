"""SDK FLOOR: the least a blob-deleting consumer can do: import boto3, build the S3 client at init, and send one
``DeleteObjects`` for the blobs the batch's REMOVE records list. No Powertools, no X-Ray, no checks."""

import json
import os
from typing import Any

import boto3

s3 = boto3.client("s3")
BUCKET = os.environ["BLOB_BUCKET"]


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = event.get("Records", [])
    keys = [
        value["S"]
        for record in records
        if record.get("eventName") == "REMOVE"
        for value in record["dynamodb"].get("OldImage", {}).get("blobs", {}).get("L", [])
    ]
    if keys:
        s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True})
    print(json.dumps({"message": "stream_records_received", "record_count": len(records)}))
    return {"batchItemFailures": []}
