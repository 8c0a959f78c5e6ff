"""The stand-in the prefix-routing test deploys: a caller and an engine deployment, no engine inside.

In Ray Serve LLM 2.58's PD app (ray/llm/_internal/serve/serving_patterns/prefill_decode/) the ingress calls the decode
deployment and each decode replica the prefill deployment, both through a handle, so the router of the called side
runs in the caller's process; the call's argument is the OpenAI request, from which PrefixCacheAffinityRouter reads
the `messages` (or `prompt`) to match (routing_policies/prefix_aware/prefix_aware_router.py
`_extract_text_from_request`). Here `Caller` stands for the calling side and `Engine` for the called one, which
takes the side's `deployment_config` from the serve config as the PD builder gives an LLMConfig's to its deployment.
Each answer names the engine replica that served it. Built by import path from a serve config, in the Ray cluster,
where the router's package comes only from the application's `runtime_env.py_modules`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ray import serve
from ray.serve.deployment import Application
from ray.serve.handle import DeploymentHandle

# Ray Serve LLM 2.58's defaults for its engine deployments (ray/llm/_internal/serve/core/server/builder.py
# DEFAULT_DEPLOYMENT_OPTIONS, constants.py): no cap on ongoing requests, a health check every 10 s with 10 s to
# answer. A stand-in replica needs little CPU; 0.1 keeps a rollout's extra replicas schedulable on 2 CPUs.
LLM_DEPLOYMENT_OPTIONS: dict[str, Any] = {
    "max_ongoing_requests": int(1e9),
    "health_check_period_s": 10,
    "health_check_timeout_s": 10,
    "ray_actor_options": {"num_cpus": 0.1},
}


@dataclass(frozen=True)
class Chat:
    messages: list[dict[str, str]]


class Engine:
    def __init__(self) -> None:
        self.replica = serve.get_replica_context().replica_id.unique_id

    async def chat(self, request: Chat, hold_s: float) -> str:
        await asyncio.sleep(hold_s)  # an engine busy with the request, so that calls overlap
        return self.replica


class Caller:
    def __init__(self, engine: DeploymentHandle) -> None:
        self.engine = engine

    async def __call__(self, turns: list[str], hold_s: float = 0.0) -> str:
        messages = [{"role": "user", "content": turn} for turn in turns]
        return str(await self.engine.chat.remote(Chat(messages), hold_s))


def build_app(args: dict[str, Any]) -> Application:
    engine = serve.deployment(Engine).options(name="Engine", **{**LLM_DEPLOYMENT_OPTIONS, **args["deployment_config"]})
    # A caller whose router spins (Ray's own router, tests/test_prefix_routing.py) never answers Serve's graceful
    # shutdown: 1 s instead of Serve's 20 s before it is killed.
    caller = serve.deployment(Caller).options(
        name="Caller", ray_actor_options={"num_cpus": 0.1}, graceful_shutdown_timeout_s=1
    )
    return caller.bind(engine.bind())
