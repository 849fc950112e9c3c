"""DynamoDB as AWS runs it: tables, options, indexes, security, Kinesis destinations, global tables."""
