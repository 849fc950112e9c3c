"""BASELINE (not the project's consumer): the blob-cleanup consumer a user would write by following the
Powertools for AWS Lambda (Python) documentation. Used only by ``python -m bench`` as the reference figure."""
