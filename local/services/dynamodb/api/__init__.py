"""DynamoDB's and DynamoDB Streams' requests as AWS answers them: what is refused before an operation runs (wire),
condition and filter expressions and the legacy conditional parameters (expressions, conditions), and the Streams
API's operations (streams)."""
