"""The app this run serves: the stack's validated config (its allow-list and certificate stood in for where they
shape the cluster, never the serve config), the serve config built from it with the one-host overrides, checked
against Ray's own schemas.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.serving.code_package import ZIP_TOP
from infra.serving.serve_config import (
    MODELS_IMPORT_PATH,
    PD_IMPORT_PATH,
    build_serve_config,
    code_packages,
    serve_app_args,
)
from infra.settings.rules_serving import API_KEYS_SETTING
from tools.offline import load_stack_config, stack_file
from tools.project import PROJECT

if TYPE_CHECKING:
    from infra.settings.stack_config import StackConfig
from lab.smoke.document import Override, engine_configs, format_path, has_path
from lab.smoke.host import HostFacts
from lab.smoke.overrides import (
    SmokeOptions,
    aggregated_overrides,
    auth_overrides,
    code_overrides,
    model_overrides,
    pd_overrides,
)

# The bucket of the smoke's local S3 server the adapters load from (lab/smoke/models.py stages them there).
ADAPTER_BUCKET = "models-proof"


def smoke_serve_config(
    cfg: StackConfig, opts: SmokeOptions, host: HostFacts
) -> tuple[dict[str, Any], dict[str, Any], list[Override]]:
    """(production config, smoke config, the overrides that turn one into the other)."""
    production = build_serve_config(serve_app_args(cfg, adapter_bucket=ADAPTER_BUCKET))
    import_path = production["applications"][0]["import_path"]
    if import_path not in (PD_IMPORT_PATH, MODELS_IMPORT_PATH):
        raise ValueError(f"expected the prefill/decode app ({PD_IMPORT_PATH}) from build_serve_config")
    if opts.aggregated and import_path == MODELS_IMPORT_PATH:
        raise ValueError("--aggregated is the one-model baseline; the stack serves several models (models)")
    build = aggregated_overrides if opts.aggregated else pd_overrides
    code = code_overrides(code_packages(serve_app_args(cfg)), opts)
    overrides = build(production, opts, host) + model_overrides(production, opts, host)
    overrides += code + auth_overrides(production, opts)
    smoke = copy.deepcopy(production)
    for override in overrides:
        if override.remove and not has_path(production, override.path):
            raise ValueError(f"the stack's serve config has no {format_path(override.path)} to leave out")
        override.apply(smoke)
    return production, smoke, overrides


def validate_with_ray(smoke: dict[str, Any]) -> None:
    """Ray's own schemas for what the dashboard and the app builder accept (no Ray started, no vLLM); a deployment's
    request router is imported by its path, from the app's code zips as in the cluster (infra/serving/
    prefix_routing.py)."""
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
    from ray.serve.schema import ServeDeploySchema

    ServeDeploySchema.model_validate(smoke)
    code = [
        f"{uri.removeprefix('file://')}/{ZIP_TOP}"
        for uri in smoke["applications"][0].get("runtime_env", {}).get("py_modules", [])
    ]
    sys.path[:0] = code
    try:
        for engine in engine_configs(smoke):
            LLMConfig.model_validate(copy.deepcopy(engine))
    finally:
        del sys.path[: len(code)]


def write_code_packages(cfg: StackConfig, code_dir: Path) -> None:
    """The zips of the stack code the app loads, where code_overrides points py_modules."""
    for package in code_packages(serve_app_args(cfg)):
        (code_dir / package.zip_name()).write_bytes(package.zip())


# The API allow-list shapes the cluster's endpoint, never the serve config; a stack file that has none yet (the
# shipped ones: each user adds their own address) still builds the app, on a stand-in range that is never applied:
# 192.88.99.0/24, the 6to4 relay anycast prefix RFC 7526 deprecated (an internet range, so the config accepts it).
ALLOW_LIST_STAND_IN = {"apiPublicAccessCidrs": ["192.88.99.0/24"]}
# The certificate --api-key-auth stands in for: the documentation account (IAM's examples use 123456789012) and a
# nil UUID, never an issued certificate.
STAND_IN_ACCOUNT = "123456789012"
STAND_IN_CERTIFICATE = "00000000-0000-0000-0000-000000000000"
STAND_IN_SOURCE_CIDRS = ("10.0.0.0/8",)


def serve_stack_config(
    stack: str, settings: Mapping[str, str] | None = None, api_keys: tuple[str, ...] = ()
) -> StackConfig:
    """The stack's validated config for building the serve app, with `settings` changed (`--config`, as strings the
    CLI would hand over); the allow-list stood in for where the file has none. With `api_keys`, the app is the one a
    stack with an exposed endpoint emits: those keys as the secret serveApiKeys, the exposure, its certificate and
    its sources stood in for (they shape the load balancer, never the serve config)."""
    has_allow_list = f"{PROJECT}:apiPublicAccessCidrs" in stack_file(stack).config
    overrides: dict[str, Any] = {} if has_allow_list else dict(ALLOW_LIST_STAND_IN)
    # As `pulumi config set KEY VALUE` stores them: strings, which the program reads by each key's kind. A YAML 1.1
    # parse would make `prefixCaching=on` the boolean true.
    overrides.update(settings or {})
    if not api_keys:
        return load_stack_config(overrides, stack=stack)
    region = load_stack_config(overrides, stack=stack).region
    overrides.update(
        serveExposure="internal",
        serveApiKeyAuth=True,
        serveApiKeys=json.dumps(list(api_keys)),
        serveCertificateArn=f"arn:aws:acm:{region}:{STAND_IN_ACCOUNT}:certificate/{STAND_IN_CERTIFICATE}",
        serveSourceCidrs=list(STAND_IN_SOURCE_CIDRS),
    )
    return load_stack_config(overrides, stack=stack, secret_keys=(API_KEYS_SETTING,))
