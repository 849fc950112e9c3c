"""What the stack needs that AWS itself provides: the public Powertools layer and the SSM parameters naming it.

The project resolves the Powertools layer through the public SSM parameter
``/aws/service/powertools/python/<arch>/python3.13/<version>``. Here a local layer version stands in for
the public one (its content is a marker; the Lambda runner provides the venv's installed Powertools for it),
published once per architecture, and the parameters (for the installed version and ``latest``) point to it.
"""

from __future__ import annotations

import base64
import io
import zipfile
from importlib import metadata

from local.patching import Target

# The layer stands in for the Powertools the venv has, so it carries that version.
POWERTOOLS_VERSION = metadata.version("aws-lambda-powertools")
PYTHON_RUNTIMES = ("python3.13",)
ARCHITECTURES = ("arm64", "x86_64")

MOTO_TARGETS = (
    Target("moto.awslambda.models", "lambda_backends"),
    Target("moto.awslambda.models", "LambdaBackend.list_layer_versions", ("self", "layer_name")),
    Target("moto.awslambda.models", "LambdaBackend.publish_layer_version", ("self", "spec")),
    Target("moto.core.utils", "utcnow"),
    Target("moto.ssm.models", "Parameter.__init__"),
    Target("moto.ssm.models", "ssm_backends"),
)


def layer_name(runtime: str, architecture: str) -> str:
    # The public layer's name, e.g. AWSLambdaPowertoolsPythonV3-python313-arm64.
    return f"AWSLambdaPowertoolsPythonV3-{runtime.replace('.', '')}-{architecture}"


def _marker_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "python/DOCTABLE_LOCAL_LAYER.txt",
            f"Stand-in for the public Powertools for AWS Lambda (Python) {POWERTOOLS_VERSION} layer.\n"
            "The local Lambda runner provides the venv's aws_lambda_powertools for it.\n",
        )
    return buffer.getvalue()


def seed(account_id: str, region: str) -> dict[str, str]:
    """Publish the stand-in layers and the SSM parameters in one account/region; return layer name -> bundle."""
    from moto.awslambda.models import lambda_backends
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    backend = lambda_backends[account_id][region]
    ssm = ssm_backends[account_id][region]
    provided: dict[str, str] = {}
    blob = _marker_zip()
    for runtime in PYTHON_RUNTIMES:
        for arch in ARCHITECTURES:
            name = layer_name(runtime, arch)
            versions = list(backend.list_layer_versions(name))
            if versions:
                version = versions[-1]
            else:
                version = backend.publish_layer_version(
                    {
                        "LayerName": name,
                        "Description": f"Powertools for AWS Lambda (Python) {POWERTOOLS_VERSION} (local stand-in)",
                        "Content": {"ZipFile": base64.b64encode(blob).decode("ascii")},
                        "CompatibleRuntimes": [runtime],
                        "CompatibleArchitectures": [arch],
                        "LicenseInfo": "MIT-0",
                    }
                )
            provided[name] = "powertools"
            for label in (POWERTOOLS_VERSION, "latest"):
                path = f"/aws/service/powertools/python/{arch}/{runtime}/{label}"
                if ssm._parameters.get(path):
                    continue
                ssm._parameters[path].append(
                    Parameter(  # type: ignore[abstract]  # moto instantiates it the same way
                        account_id=account_id,
                        name=path,
                        value=version.arn,
                        parameter_type="String",
                        description=None,
                        allowed_pattern=None,
                        keyid=None,
                        last_modified_date=utcnow(),
                        version=1,
                        data_type="text",
                    )
                )
    return provided
