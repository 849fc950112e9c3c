"""The behaviours of the local AWS's front door: authentication (signatures, the anonymous principal) and IAM
evaluation."""

from __future__ import annotations

from local.behaviours.registry import (
    DDB_GUIDE,
    IAM_GUIDE,
    LAMBDA_GUIDE,
    S3_GUIDE,
    Behaviour,
)

BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        id="iam.signature-required",
        service="iam",
        rule="A request to a service that needs a signature and has none is MissingAuthenticationTokenException (JSON "
        "services; query services MissingAuthenticationToken; Lambda 'Missing Authentication Token'); an "
        "Authorization header (its parts separated by commas, spaces or both) that is not a complete SigV4 one (no "
        "Credential, Signature, SignedHeaders or date, "
        "another algorithm, a scope without its aws4_request terminator) is IncompleteSignatureException naming "
        "every part it lacks (S3: InvalidArgument); neither reaches the service.",
        source=IAM_GUIDE + "reference_sigv-troubleshooting.html",
        test="tests/unit/test_local_auth_front_door.py::test_a_header_without_credential_deletes_nothing",
        unchecked="these common errors are in no service model botocore ships; AWS's words are its services' "
        "answers as users quote them (the outside suite's test_authorization checks the unsigned case on AWS)",
    ),
    Behaviour(
        id="iam.signature-verified",
        service="iam",
        rule="A SigV4 signature is recomputed with the access key's secret (an IAM user's key, an assumed-role "
        "session's): a mismatch is InvalidSignatureException (S3 and query services: SignatureDoesNotMatch); a "
        "request dated more than 15 minutes from the server's real time is InvalidSignatureException 'Signature "
        "expired' (S3: RequestTimeTooSkewed), before its key is looked up; a presigned URL past X-Amz-Expires is AccessDenied 'Request has "
        "expired'; an expired session is ExpiredTokenException (S3: ExpiredToken). S3 signs the payload hash "
        "x-amz-content-sha256 states (its body is s3.payload-integrity's).",
        source=IAM_GUIDE + "reference_sigv-create-signed-request.html",
        test="tests/unit/test_local_sigv4.py::test_a_wrong_secret_is_refused_in_each_protocols_form",
        differs=("dynamodb.get-item-forged|error|ok->InvalidSignatureException",),
    ),
    Behaviour(
        id="iam.signature-scope",
        service="iam",
        rule="A signature's scope names a region of AWS's partitions and the service the request is for: else "
        "InvalidSignatureException (query services: SignatureDoesNotMatch) 'Credential should be scoped to a valid "
        "region, not ...' / 'Credential should be scoped to correct service: ...', both named together; an S3 "
        "request scoped to another region than its bucket's is AuthorizationHeaderMalformed (a presigned URL: "
        "AuthorizationQueryParametersError) 'the region ... is wrong; expecting ...' with the bucket's Region, "
        "which botocore's redirect follows.",
        source=IAM_GUIDE + "reference_sigv-create-signed-request.html",
        test="tests/unit/test_local_s3_payload.py::test_a_scope_names_a_real_region_and_the_requests_service",
        errors=(
            ("dynamodb:ListTables", "InvalidSignatureException"),
            ("s3:PutObject", "AuthorizationHeaderMalformed"),
            ("s3:GetObject", "AuthorizationQueryParametersError"),
        ),
    ),
    Behaviour(
        id="s3.payload-integrity",
        service="s3",
        rule="An S3 body is the one its head vouches for: a stated x-amz-content-sha256 is its SHA-256 "
        "(XAmzContentSHA256Mismatch); aws-chunked chunks and a trailer signed with STREAMING-AWS4-HMAC-SHA256-"
        "PAYLOAD[-TRAILER] carry signatures chained from the seed (SignatureDoesNotMatch), the decoded length "
        "and announced trailers are there (IncompleteBody); a checksum header or trailer (CRC32, CRC32C, "
        "CRC64NVME, SHA1, SHA256) and Content-MD5 are the body's (BadDigest; InvalidDigest for a malformed MD5).",
        source="https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html",
        test="tests/unit/test_local_s3_payload.py::test_the_published_chunked_examples_hold_and_a_changed_byte_does_not",
        differs=("s3.put-bad-checksum|error|ok->BadDigest",),
        errors=(
            ("s3:PutObject", "BadDigest"),
            ("s3:PutObject", "InvalidDigest"),
            ("s3:PutObject", "XAmzContentSHA256Mismatch"),
            ("s3:PutObject", "IncompleteBody"),
            ("s3:PutObject", "SignatureDoesNotMatch"),
        ),
    ),
    Behaviour(
        id="s3.missing-bucket-first",
        service="s3",
        rule="A request naming a bucket that does not exist is answered NoSuchBucket (HEAD: 404) whoever makes it, "
        "before any permission is evaluated (a bucket nobody owns has no owner's policies to evaluate); only "
        "CreateBucket is authorized on a missing bucket.",
        source="https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadBucket.html",
        test="tests/unit/test_local_s3_payload.py::test_a_bucket_nobody_owns_is_no_such_bucket_whoever_asks",
        errors=(("s3:HeadBucket", "NoSuchBucket"), ("s3:GetObject", "NoSuchBucket")),
    ),
    Behaviour(
        id="s3.anonymous-requests",
        service="s3",
        rule="An unsigned S3 request is made by the anonymous principal: it is allowed only by a bucket policy "
        "statement naming everyone (Principal '*'), and never where the bucket's public access block restricts "
        "public buckets; otherwise AccessDenied, for reads and writes alike (bucket ACLs granting AllUsers are not "
        "honoured: the project's buckets own their objects and use none).",
        source=S3_GUIDE + "access-control-block-public-access.html",
        test="tests/unit/test_local_auth_front_door.py::test_an_unsigned_s3_request_is_the_anonymous_principal",
        differs=("s3.put-anonymous|error|ok->AccessDenied",),
    ),
    Behaviour(
        id="iam.policy-evaluation",
        service="iam",
        rule="A request is allowed only by an Allow in an identity or resource policy, and any explicit Deny wins; "
        "a principal with a permissions boundary gets only what its identity policies and the boundary both allow "
        "('because no permissions boundary allows the <action> action'), and iam:PermissionsBoundary is the "
        "boundary an IAM call sets (CreateRole, Put*PermissionsBoundary) or the one the role or user has.",
        source=IAM_GUIDE + "reference_policies_evaluation-logic.html",
        test="tests/unit/test_local_iam_policy.py::test_explicit_deny_wins_over_any_allow",
        unchecked="no independent evaluator is installed; the actions and resources it is asked about are checked "
        "against the Service Authorization Reference (iam.request-actions)",
    ),
    Behaviour(
        id="iam.request-actions",
        service="iam",
        rule="Each API call is authorized as the actions and resource ARNs the Service Authorization Reference "
        "gives for its operation (S3's HeadObject as s3:GetObject, DeleteObjects per key as s3:DeleteObject, ...).",
        source="https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html",
        test="tests/unit/test_local_iam_policy.py::test_requests_name_the_resources_aws_authorizes",
        actions=("s3:GetObject", "s3:DeleteObject", "s3:ListBucket", "dynamodb:ConditionCheckItem"),
        condition_keys=(("s3:ListBucket", "s3:prefix"), ("s3:ListBucket", "s3:delimiter")),
    ),
    Behaviour(
        id="iam.pass-role",
        service="iam",
        rule="A stack operation with a RoleARN needs iam:PassRole on it, with iam:PassedToService "
        "cloudformation.amazonaws.com.",
        source=IAM_GUIDE + "id_roles_use_passrole.html",
        test="tests/unit/test_local_iam_policy.py::test_a_stack_operation_with_a_role_passes_it_to_cloudformation",
        condition_keys=(("iam:PassRole", "iam:PassedToService"),),
    ),
    Behaviour(
        id="iam.kms-via-dynamodb",
        service="kms",
        rule="Reading a table under a customer managed key needs kms:Decrypt on the key through DynamoDB "
        "(kms:ViaService dynamodb.<region>.amazonaws.com).",
        source=DDB_GUIDE + "encryption.usagenotes.html",
        test="tests/unit/test_local_dynamodb_security.py::test_reads_under_a_customer_managed_key_need_kms_decrypt_through_dynamodb",
        condition_keys=(("kms:Decrypt", "kms:ViaService"),),
    ),
    Behaviour(
        id="iam.mapping-acts-as-its-role",
        service="lambda",
        rule="A stream mapping reads its source and writes its on-failure destination with the function's execution "
        "role: a role without the stream reads leaves the mapping PROBLEM.",
        source=LAMBDA_GUIDE + "with-ddb.html#events-dynamodb-permissions",
        test="tests/integration/test_iam.py::test_mapping_acts_as_the_function_role",
        actions=(
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
            "s3:PutObject",
        ),
    ),
)
