"""CloudFormation as AWS runs it: stacks and change sets, updates and rollbacks, imports, models."""
