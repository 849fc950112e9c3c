"""DynamoDB as AWS runs it: tables, options, indexes, security, Kinesis destinations, global tables.

The errors its modules answer with, written once: each is moto's exception of that code, so moto's handler
renders it as DynamoDB does (``__type`` and ``message``).
"""

from __future__ import annotations


def validation(message: str) -> Exception:
    """DynamoDB's ValidationException (HTTP 400) with ``message``."""
    from moto.dynamodb.exceptions import MockValidationException

    return MockValidationException(message)


def not_found(message: str) -> Exception:
    """DynamoDB's ResourceNotFoundException with ``message``."""
    from moto.dynamodb.exceptions import ResourceNotFoundException

    return ResourceNotFoundException(message)


def limit_exceeded(message: str) -> Exception:
    """DynamoDB's LimitExceededException with ``message``."""
    from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException

    return DynamodbException(ERROR_TYPE_PREFIX + "LimitExceededException", message)
