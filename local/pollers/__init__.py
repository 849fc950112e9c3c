"""What polls on AWS's side: event-source mappings on DynamoDB and Kinesis streams, their filters, TTL."""
