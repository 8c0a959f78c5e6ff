"""Prefix-aware routing in the serve config: the router class a side's deployment names, and where its code comes from.

The class is serve_ext's fix of Ray Serve LLM's PrefixCacheAffinityRouter, named in the side's
`deployment_config.request_router_config` and shipped as stack code (infra/serving/code_package.py);
docs/prefix-caching.md#prefix-aware-routing-ray-serve-llm-258 has Ray's sources."""

from __future__ import annotations

from typing import Any

from infra.serving.code_package import CodePackage

CODE = CodePackage("ray_llm_eks_routing", "prefix-router-code", "/opt/ray-llm-eks/prefix-router")
ROUTER_CLASS = f"{CODE.package}.router:PrefixCacheAffinityRouter"
# Ray's defaults but eviction, which is off by default and lets the prefix tree grow without bound
# (docs/prefix-caching.md#prefix-aware-routing-ray-serve-llm-258).
ROUTER_KWARGS = {"do_eviction": True}


def request_router_config() -> dict[str, Any]:
    return {"request_router_class": ROUTER_CLASS, "request_router_kwargs": dict(ROUTER_KWARGS)}
