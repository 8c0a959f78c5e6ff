"""API-key auth on the serve endpoint: how the auth package (`serve_ext/ray_llm_eks_auth`) reaches the Ray pods, as
infra/serving/code_package.py ships stack code, and how the serve config names it."""

from __future__ import annotations

from typing import Any

from infra.serving.code_package import CodePackage

PACKAGE = "ray_llm_eks_auth"
CODE = CodePackage(PACKAGE, "serve-auth-code", "/opt/ray-llm-eks/serve-auth")
INGRESS_CLS = f"{PACKAGE}.ingress:ApiKeyIngress"
KEYS_SECRET = "serve-api-keys"
KEYS_SECRET_KEY = "keys"
KEYS_MOUNT = "/etc/ray-llm-eks/api-keys"
KEYS_FILE = f"{KEYS_MOUNT}/{KEYS_SECRET_KEY}"


def ingress_args(keys_file: str = KEYS_FILE) -> dict[str, Any]:
    """The PD builder's ingress arguments: our ingress class, told where the keys are."""
    return {"ingress_cls_config": {"ingress_cls": INGRESS_CLS, "ingress_extra_kwargs": {"api_keys_file": keys_file}}}


def keys_file_content(keys: list[str]) -> str:
    return "".join(f"{key}\n" for key in keys)
