"""FLOOR: the cheapest possible stream handler (imports only ``json``); it deletes nothing."""

import json


def lambda_handler(event, context):
    records = event.get("Records", [])
    print(json.dumps({"message": "stream_records_received", "record_count": len(records)}))
    return {"batchItemFailures": []}
