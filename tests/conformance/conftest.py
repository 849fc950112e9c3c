"""The conformance tier: the local AWS held against references nobody here wrote (botocore's service models,
IAM's Service Authorization Reference, CloudFormation's resource schemas, plain moto). Offline; `make test` runs
it. Only tests/conformance/test_plain_moto.py starts servers (the local AWS and plain moto, once)."""
