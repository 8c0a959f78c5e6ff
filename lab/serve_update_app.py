"""The stand-in app `lab.serve_update_cpu` updates: shaped like Ray Serve LLM 2.58's PD app, with no engines.

`build_pd_openai_app` (ray/llm/_internal/serve/serving_patterns/prefill_decode/builder.py) builds a 3-tier graph:
an ingress holding a handle to `Decode:<model>`, whose replicas hold a handle to `Prefill:<model>`; each side's
engine kwargs and deployment options come in the application's `args`. Here each side's constructor sleeps
`load_s` (the engine load) and takes an `arg` (its engine kwargs); `fail` makes the constructor raise after the
sleep (a bad engine config). Every answer names the `arg` of each replica that served it, so a client sees which
version answered. Built by import path from a serve config, in the Ray cluster, as the stack's app is.
"""

from __future__ import annotations

import time
from typing import Any

from ray import serve
from ray.serve.deployment import Application
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request

from tests.prefix_routing_app import LLM_DEPLOYMENT_OPTIONS


class Side:
    """One side of the pair: loads for `load_s`, then answers with its `arg` and, for decode, prefill's."""

    def __init__(
        self, name: str, arg: str, load_s: float, fail: bool = False, downstream: DeploymentHandle | None = None
    ) -> None:
        time.sleep(load_s)
        if fail:
            raise RuntimeError(f"{name}: the engine did not start with {arg!r} (the stand-in's broken config)")
        self.name, self.arg, self.downstream = name, arg, downstream

    async def __call__(self) -> dict[str, str]:
        served = {self.name: self.arg}
        if self.downstream is not None:
            served |= await self.downstream.remote()
        return served


class Ingress:
    """The OpenAI ingress's place: the HTTP proxy's target, calling decode by handle."""

    def __init__(self, decode: DeploymentHandle, label: str, load_s: float) -> None:
        time.sleep(load_s)
        self.decode, self.label = decode, label

    async def __call__(self, request: Request) -> dict[str, str]:
        return {"ingress": self.label, **await self.decode.remote()}


def build_app(args: dict[str, Any]) -> Application:
    """The graph from the serve config's `args`: `replicas` a side, `ingress_replicas`, and each side's options."""
    sides: dict[str, Application] = {}
    for name, downstream in (("prefill", None), ("decode", "prefill")):
        options = {**LLM_DEPLOYMENT_OPTIONS, "num_replicas": args["replicas"], "name": name.capitalize()}
        bound = sides.get(downstream) if downstream else None
        sides[name] = serve.deployment(**options)(Side).bind(name, **args[name], downstream=bound)
    ingress = serve.deployment(
        name="Ingress", num_replicas=args["ingress_replicas"], ray_actor_options={"num_cpus": 0.1}
    )
    return ingress(Ingress).bind(sides["decode"], args["label"], args["ingress_load_s"])
