"""The WSGI middleware that authorizes every API call as AWS does, answering a refusal in the service's format.

A request's access key names the principal (an IAM user's key, or an assumed-role session's key with its
token); its identity policies, and the bucket policy or the table resource policy, are evaluated for each action and resource the
request needs (local/auth/requests.py). sts:AssumeRole also needs the role's trust policy to allow the caller;
sts:GetCallerIdentity is always allowed. S3 DeleteObjects is authorized key by key: denied keys come back as
per-key AccessDenied errors, the rest are deleted. Calls the server makes itself (CloudFormation creating
resources) do not pass through here.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from local import incidents, state
from local.auth import payload, policy, principals, requests, signing, sigv4, table_access

log = logging.getLogger("doctable.local.auth")
_BYPASS = ("/_doctable/", "/moto-api")
INVALID_TOKEN = "The security token included in the request is invalid."
ALLOW = object()  # the decision that hands the request on to the service unchanged


def authorize(
    principal: principals.Principal, check: requests.Check, resource_policy: Any = None
) -> policy.Decision:
    """One action on one resource by ``principal``, with the request's condition keys."""
    request = principal.request(check.action, check.resource, check.context)
    return policy.evaluate(request, principal.policies, resource_policy, principal.boundary)


class AuthMiddleware:
    """WSGI: refuses what the caller's policies do not allow; everything allowed passes through unchanged."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith(_BYPASS) or path == "/_doctable/health":
            return self.app(environ, start_response)
        refused = signing.refusal(environ)
        if (
            refused is not None
        ):  # unsigned where a signature is required, or an incomplete Authorization header
            shown = requests.Parsed("", refused.protocol, "", None, None, [])
            return _error(
                start_response, shown, refused.xml_code, refused.json_code, refused.message, refused.status
            )
        body = self._body(environ)
        parsed = requests.parse(environ, body)
        if parsed is None:  # unsigned S3: the anonymous principal
            try:
                return self._anonymous(environ, start_response, body)
            except Exception as exc:  # noqa: BLE001 - a check that raises denies
                shown = requests.Parsed("s3", "rest-xml", "anonymous", None, None, [])
                incidents.record("auth.check.s3:anonymous", exc)
                return _internal_failure(start_response, shown, exc)
        # The one place a permission check's failure is caught: it refuses the request (fail closed), logged.
        try:
            outcome = self._decide(environ, start_response, parsed, body)
        except Exception as exc:  # noqa: BLE001 - whatever the check raised, the request is not let through
            incidents.record(f"auth.check.{parsed.service}:{parsed.operation}", exc)
            return _internal_failure(start_response, parsed, exc)
        if outcome is not ALLOW:
            return outcome
        if parsed.service != "cloudformation":
            return self.app(environ, start_response)
        # a stack operation without a role acts as its caller: the caller is known while the call is answered
        caller = principals.CALLER.set(environ.get("doctable.principal"))
        try:
            return self.app(environ, start_response)
        finally:
            principals.CALLER.reset(caller)

    def _decide(
        self, environ: dict[str, Any], start_response: Any, parsed: requests.Parsed, body: bytes | None
    ) -> Any:
        """ALLOW, or the answer that refuses the request (DeleteObjects: the answer for its allowed keys)."""
        signature = sigv4.read(environ)
        # A request dated too far from now is refused before its key is looked up (AWS answers "Signature
        # expired" to a stale request whatever key signed it).
        stale = sigv4.skew(signature, datetime.now(UTC)) if signature is not None else None
        if stale is not None:
            return _bad_signature(start_response, parsed, stale, signature)
        scoped = _scope_refusal(environ, start_response, parsed, signature)
        if scoped is not None:
            return scoped
        try:
            principal = principals.resolve(parsed.access_key or "", parsed.session_token)
        except principals.UnknownKey:
            return _invalid_key(start_response, parsed)
        except principals.ExpiredSession:
            return _expired_token(start_response, parsed)
        wrong = (
            sigv4.problem(environ, body, principal.secret, signature, datetime.now(UTC))
            if signature is not None
            else sigv4.Problem("mismatch", sigv4.MISMATCH)
        )
        if wrong is not None:
            log.info(
                "signature refused (%s) %s %s: %s%s", wrong.kind, environ.get("REQUEST_METHOD"),
                environ.get("RAW_URI") or environ.get("PATH_INFO"), wrong.message,
                f"; canonical request:\n{wrong.canonical}" if wrong.canonical else "",
            )  # fmt: skip
            return _bad_signature(start_response, parsed, wrong, signature)
        # S3: the body the head's signature vouches for (its chunks, its hash, its checksums)
        if parsed.service == "s3":
            chain = None
            if signature is not None and not signature.presigned:
                key = sigv4.signing_key(principal.secret, signature.scope)
                chain = payload.Chain(key, signature.amz_date, signature.scope, signature.signature)
            bad_body = payload.check(_headers(environ), body or b"", chain)
            if bad_body is not None:
                return _bad_payload(start_response, parsed, bad_body)
        environ["doctable.principal"] = principal
        # aws:SecureTransport as the request arrived: over the TLS listener, or over the plain-HTTP one.
        secure = "true" if environ.get("wsgi.url_scheme") == "https" else "false"
        # aws:RequestedRegion: the region the request is signed for (a function in another region calls its own).
        region = requests.credential(environ)[1] or state.REGION
        for check in parsed.checks:
            check.context.setdefault("aws:SecureTransport", [secure])
            check.context.setdefault("aws:RequestedRegion", [region])
        if parsed.service == "sts" and parsed.operation == "GetCallerIdentity":
            return ALLOW
        if parsed.service == "sts" and parsed.operation == "AssumeRole":
            refusal = _assume_role_refusal(principal, parsed.checks[0])
            if refusal:
                return _denied(start_response, parsed, refusal)
            return ALLOW
        if (
            parsed.service == "s3" and parsed.bucket and parsed.operation != "CreateBucket"
            and principals.bucket_region(parsed.bucket) is None
        ):  # fmt: skip
            return ALLOW  # a bucket nobody owns: S3 answers NoSuchBucket whoever asks (no policy to evaluate)
        resource_policy = principals.bucket_policy(parsed.bucket) if parsed.service == "s3" else None
        if parsed.delete_keys is not None:
            return self._delete_objects(environ, start_response, parsed, principal, resource_policy, body)
        if parsed.service == "iam" and parsed.operation in requests.BOUNDARY_HELD:
            for check in parsed.checks:  # the boundary the role or user has now
                kind, _, name = check.resource.rpartition(":")[2].partition("/")
                held = (
                    principals.boundary_arn(kind, name.rsplit("/", 1)[-1])
                    if kind in ("role", "user")
                    else None
                )
                if held:
                    check.context["iam:PermissionsBoundary"] = [held]
        if parsed.service == "dynamodb":
            parsed.checks += table_access.key_checks(parsed.checks)
            parsed.checks += table_access.destination_checks(parsed.checks)
        for check in parsed.checks:
            if parsed.service == "dynamodb":  # a table's (and its indexes') resource-based policy
                resource_policy = table_access.resource_policy(check.resource)
            decision = authorize(principal, check, resource_policy)
            if not decision.allowed:
                resource = f'"{check.resource}"' if parsed.service == "s3" else check.resource
                message = policy.denial_message(principal.arn, check.action, resource, decision.reason)
                log.info("denied: %s", message)
                return _denied(start_response, parsed, message)
        return ALLOW

    def _anonymous(self, environ: dict[str, Any], start_response: Any, body: bytes | None) -> Any:
        """An unsigned S3 request, as the anonymous principal: only a bucket policy allowing everyone ("*") lets
        it through, and not where the bucket's public access block restricts public buckets."""
        parsed = requests.anonymous(environ, body)
        bad_body = payload.check(_headers(environ), body or b"", None)
        if bad_body is not None:
            return _bad_payload(start_response, parsed, bad_body)
        resource_policy = principals.bucket_policy(parsed.bucket)
        restricted = principals.public_access_restricted(parsed.bucket)
        for check in parsed.checks:
            check.context.setdefault(
                "aws:SecureTransport", ["true" if environ.get("wsgi.url_scheme") == "https" else "false"]
            )
            request = policy.Request("anonymous", check.action, check.resource, dict(check.context))
            if restricted or not policy.evaluate(request, [], resource_policy).allowed:
                log.info("denied: anonymous %s on %s", check.action, check.resource)
                return _error(start_response, parsed, "AccessDenied", "", "Access Denied")
        return self.app(environ, start_response)

    @staticmethod
    def _body(environ: dict[str, Any]) -> bytes | None:
        """The request's body, re-readable after: its signature, its authorization or its integrity depend on it."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        stream = environ.get("wsgi.input")
        if length > 0 and stream is not None:
            body = stream.read(length)
        elif environ.get("wsgi.input_terminated") and stream is not None:
            body = stream.read()
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return body

    def _delete_objects(
        self, environ: dict[str, Any], start_response: Any, parsed: requests.Parsed,
        principal: principals.Principal, resource_policy: Any, body: bytes | None,
    ) -> Any:  # fmt: skip
        from local.faults.middleware import _delete_body, _forward, delete_result

        keys = parsed.delete_keys or []
        denied: dict[str, str] = {}
        for key, check in zip(keys, parsed.checks, strict=True):
            decision = authorize(principal, check, resource_policy)
            if not decision.allowed:
                denied[key] = policy.denial_message(
                    principal.arn, check.action, f'"{check.resource}"', decision.reason
                )
        if not denied:
            return ALLOW
        log.info("DeleteObjects: %d of %d keys denied to %s", len(denied), len(keys), principal.arn)
        allowed = [k for k in keys if k not in denied]
        result = ""
        if allowed:
            status, headers, data = _forward(self.app, environ, _delete_body(body or b"", allowed))
            if not status.startswith("200"):
                start_response(status, headers)
                return [data]
            result = data.decode("utf-8")
        return delete_result(start_response, result, [(k, "AccessDenied", m) for k, m in denied.items()])


def _assume_role_refusal(principal: principals.Principal, check: requests.Check) -> str | None:
    """None when the caller may assume the role (its identity policy allows it and the trust policy trusts it)."""
    from moto.iam.models import iam_backends

    message = (
        f"User: {principal.arn} is not authorized to perform: sts:AssumeRole on resource: {check.resource}"
    )
    role = next(
        (
            r
            for r in iam_backends[principals.state.ACCOUNT_ID]["aws"].roles.values()
            if r.arn == check.resource
        ),
        None,
    )
    if role is None:
        return message
    if not authorize(principal, check).allowed:
        return message
    trust = principal.request("sts:AssumeRole", check.resource, check.context)
    if not policy.trust_allows(role.assume_role_policy_document, trust):
        return message
    return None


def _internal_failure(start_response: Any, parsed: requests.Parsed, exc: Exception) -> list[bytes]:
    """HTTP 500 in the service's format (InternalFailure; S3's InternalError), naming the check that raised: a
    client retries it, and no policy test counts it as a refusal."""
    message = (
        f"the local AWS's permission check of {parsed.service}:{parsed.operation} failed "
        f"({type(exc).__name__}: {exc}); the request was refused, see the server log"
    )
    code = "InternalError" if parsed.protocol == "rest-xml" else "InternalFailure"
    return _error(start_response, parsed, code, code, message, status="500 Internal Server Error", fault=True)


def _denied(start_response: Any, parsed: requests.Parsed, message: str) -> list[bytes]:
    return _error(start_response, parsed, "AccessDenied", "AccessDeniedException", message)


def _invalid_key(start_response: Any, parsed: requests.Parsed) -> list[bytes]:
    if parsed.protocol == "rest-xml":
        message = "The AWS Access Key Id you provided does not exist in our records."
        return _error(start_response, parsed, "InvalidAccessKeyId", "", message)
    code = "InvalidClientTokenId" if parsed.protocol == "query" else "UnrecognizedClientException"
    return _error(start_response, parsed, code, code, INVALID_TOKEN)


def _expired_token(start_response: Any, parsed: requests.Parsed) -> list[bytes]:
    if parsed.protocol == "rest-xml":
        return _error(
            start_response, parsed, "ExpiredToken", "", "The provided token has expired.", "400 Bad Request"
        )
    code = "ExpiredToken" if parsed.protocol == "query" else "ExpiredTokenException"
    return _error(start_response, parsed, code, code, "The security token included in the request is expired")


# A signature that does not hold, by kind and protocol: (code, HTTP status). JSON services answer 400, Lambda's
# REST API and the query services 403; S3 names each kind.
_SIGNATURE_CODES = {
    "json": ("InvalidSignatureException", "400 Bad Request"),
    "rest-json": ("InvalidSignatureException", "403 Forbidden"),
    "query": ("SignatureDoesNotMatch", "403 Forbidden"),
}
_S3_SIGNATURE_CODES = {
    "mismatch": ("SignatureDoesNotMatch", "403 Forbidden"),
    "skewed": ("RequestTimeTooSkewed", "403 Forbidden"),
    "expired": ("AccessDenied", "403 Forbidden"),
}


def _bad_signature(
    start_response: Any, parsed: requests.Parsed, wrong: sigv4.Problem, signature: sigv4.Signature | None
) -> list[bytes]:
    """The answer to a signature that does not hold, in the protocol's form (Signature Version 4 errors)."""
    if parsed.protocol == "rest-xml":
        if wrong.kind == "malformed":
            code = "InvalidRequest"
            if wrong.message != sigv4.NO_CONTENT_SHA:
                presigned = signature is not None and signature.presigned
                code = "AuthorizationQueryParametersError" if presigned else "AuthorizationHeaderMalformed"
            return _error(start_response, parsed, code, "", wrong.message, "400 Bad Request")
        code, status = _S3_SIGNATURE_CODES[wrong.kind]
        return _error(start_response, parsed, code, "", wrong.message, status)
    if wrong.kind == "malformed":
        code = "IncompleteSignature" if parsed.protocol == "query" else "IncompleteSignatureException"
        return _error(start_response, parsed, code, code, wrong.message, "400 Bad Request")
    code, status = _SIGNATURE_CODES[parsed.protocol]
    return _error(start_response, parsed, code, code, wrong.message, status)


def _scope_refusal(
    environ: dict[str, Any], start_response: Any, parsed: requests.Parsed, signature: sigv4.Signature | None
) -> list[bytes] | None:
    """A signature scoped to a region that is none, to another service than the request's, or (S3) to another
    region than the bucket's: AWS's answer before the key is looked up; None when the scope holds."""
    if signature is None:
        return None
    parts = signature.scope.split("/")
    region, service = (parts[1], parts[2]) if len(parts) == 4 else ("", "")
    if parsed.service != "s3" or signing.signing_name(environ) is not None:
        problem = signing.scope_problem(environ, region, service)
        if problem is None:
            return None
        return _bad_signature(start_response, parsed, sigv4.Problem("mismatch", problem), signature)
    expected = principals.bucket_region(parsed.bucket) or (
        None if signing.valid_region(region) else state.REGION
    )
    if expected is None or expected == region:
        return None
    template = signing.S3_QUERY_REGION if signature.presigned else signing.S3_REGION
    code = "AuthorizationQueryParametersError" if signature.presigned else "AuthorizationHeaderMalformed"
    message = template.format(region=region, expected=expected)
    log.info("S3 scope refused: %s", message)
    return _error(
        start_response, parsed, code, "", message, "400 Bad Request", fields=(("Region", expected),)
    )


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers by lower-case name (the two CGI ones included)."""
    found = {k[5:].lower().replace("_", "-"): str(v) for k, v in environ.items() if k.startswith("HTTP_")}
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            found[name.lower().replace("_", "-")] = str(environ[name])
    return found


def _bad_payload(start_response: Any, parsed: requests.Parsed, refusal: payload.Refusal) -> list[bytes]:
    log.info("S3 body refused: %s %s", refusal.code, refusal.message)
    return _error(
        start_response, parsed, refusal.code, "", refusal.message, refusal.status, fields=refusal.fields
    )


def _error(
    start_response: Any,
    parsed: requests.Parsed,
    xml_code: str,
    json_code: str,
    message: str,
    status: str | None = None,
    fault: bool = False,  # a server-side failure: the service's fault, not the caller's
    fields: tuple[tuple[str, str], ...] = (),  # S3: the error's elements beside its code and message
) -> list[bytes]:
    request_id = str(uuid.uuid4())
    headers = [("x-amzn-RequestId", request_id)]
    if parsed.protocol == "json":
        status = status or "400 Bad Request"
        body = json.dumps({"__type": f"com.amazon.coral.service#{json_code}", "Message": message})
        headers.append(("Content-Type", "application/x-amz-json-1.0"))
    elif parsed.protocol == "rest-json":
        status = status or "403 Forbidden"
        body = json.dumps({"Type": "Service" if fault else "User", "Message": message})
        headers += [("Content-Type", "application/json"), ("x-amzn-ErrorType", json_code)]
    elif parsed.protocol == "rest-xml":
        status = status or "403 Forbidden"
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{xml_code}</Code><Message>{escape(message)}</Message>"
            + "".join(f"<{name}>{escape(value)}</{name}>" for name, value in fields)
            + f"<RequestId>{request_id[:16].upper()}</RequestId><HostId>doctable-local</HostId></Error>"
        )
        headers += [("Content-Type", "application/xml"), ("x-amz-request-id", request_id[:16].upper())]
        headers += [("x-amz-bucket-region", value) for name, value in fields if name == "Region"]
    else:
        status = status or "403 Forbidden"
        body = (
            f"<ErrorResponse><Error><Type>{'Receiver' if fault else 'Sender'}</Type>"
            f"<Code>{xml_code}</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        )
        headers.append(("Content-Type", "text/xml"))
    data = body.encode("utf-8")
    headers.append(("Content-Length", str(len(data))))
    start_response(status, headers)
    return [data]
