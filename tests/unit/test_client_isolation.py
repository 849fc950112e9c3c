"""doctable.client works with boto3 alone: in an isolated interpreter whose path holds only the standard library,
boto3's distributions and the client package, it imports and runs (botocore's Stubber answering), and neither the
CDK, moto nor any other part of the project can be imported there."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Importable in the isolated interpreter: what would make the client depend on more than boto3.
FORBIDDEN = (
    "aws_cdk", "constructs", "cdk_nag", "jsii", "aws_lambda_powertools", "moto",
    "contract", "infra", "local", "stream_consumer", "bench", "tests",
)  # fmt: skip

PROGRAM = r"""
import importlib.util, io, json, sys
sys.path.insert(0, sys.argv[1])
forbidden = json.loads(sys.argv[2])
importable = [name for name in forbidden if importlib.util.find_spec(name) is not None]

import boto3
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from doctable.client import DocClient

session = boto3.session.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="eu-west-1")
ddb, s3 = session.client("dynamodb"), session.client("s3")
docs = DocClient("items-dev", "bucket", blob_root="docs/", dynamodb=ddb, s3=s3, bucket_owner="123456789012")
owned = {"Bucket": "bucket", "ExpectedBucketOwner": "123456789012"}
with Stubber(ddb) as dynamo, Stubber(s3) as bucket:
    bucket.add_response("put_object", {"ETag": '"e1"'}, {**owned, "Key": ANY, "Body": ANY, "IfNoneMatch": "*"})
    dynamo.add_response("put_item", {})
    written = docs.put("doc", "v", {"n": 1}, blobs={"a": b"A"})
    entry = written.manifest[0]
    item = {"pk": {"S": "doc"}, "sk": {"S": "v"}, "version": {"N": "1"}, "n": {"N": "1"},
            "blobs": {"L": [{"M": {"key": {"S": entry.key}, "etag": {"S": '"e1"'}, "size": {"N": "1"}}}]}}
    dynamo.add_response("get_item", {"Item": item})
    bucket.add_response("get_object", {"Body": StreamingBody(io.BytesIO(b"A"), 1)},
                        {**owned, "Key": entry.key, "IfMatch": '"e1"'})
    content = docs.get("doc", "v").blobs["a"].read()
top = sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names) - {"__main__", "__mp_main__"})
print(json.dumps({"importable": importable, "modules": top, "content": content.decode(), "key": entry.key}))
"""


def _requirement_names(distribution: str) -> set[str]:
    """The distribution and every distribution it requires, without extras."""
    seen: set[str] = set()
    pending = [distribution]
    while pending:
        name = pending.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for requirement in metadata.requires(name) or []:
            if "extra ==" in requirement:
                continue
            pending.append(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
    return seen


def _isolated_path(tmp_path: Path) -> Path:
    """A directory holding boto3's distributions' top-level modules and the client package (symlinks)."""
    site = tmp_path / "site"
    site.mkdir()
    wanted = _requirement_names("boto3")
    for module, distributions in metadata.packages_distributions().items():
        if {d.lower().replace("_", "-") for d in distributions} & wanted and not module.startswith("_"):
            for candidate in (Path(p) / module for p in sys.path if p):
                for path in (candidate, candidate.with_suffix(".py")):
                    if path.exists() and not (site / path.name).exists():
                        (site / path.name).symlink_to(path)
    (site / "doctable").mkdir()
    (site / "doctable" / "__init__.py").symlink_to(ROOT / "doctable" / "__init__.py")
    (site / "doctable" / "client").symlink_to(ROOT / "doctable" / "client")
    return site


def test_the_client_runs_with_boto3_alone(tmp_path: Path) -> None:
    # GIVEN an isolated interpreter (-I: no environment, no user site; -S: no site-packages) whose path is the
    # standard library, boto3's distributions and the client package
    site = _isolated_path(tmp_path)

    # WHEN it imports the client and puts and gets a document with a blob (botocore's Stubber answering)
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROGRAM, str(site), json.dumps(FORBIDDEN)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)

    # THEN it works, nothing of the CDK, moto or the rest of the project could even be imported, and the only
    # modules loaded beyond the standard library are boto3's and the client's
    assert result["content"] == "A" and result["key"].startswith("docs/doc/v/a-")
    assert result["importable"] == []
    assert set(result["modules"]) <= {
        "boto3",
        "botocore",
        "s3transfer",
        "jmespath",
        "dateutil",
        "urllib3",
        "six",
        "doctable",
    }
