"""A stand-in for Ray Serve LLM's OpenAI ingress, behind the same API-key mixin; the app the auth test deploys.

Built by import path from a serve config (like `build_pd_openai_app`), in the Ray cluster, where `ray_llm_eks_auth`
comes only from the application's `runtime_env.py_modules`. Its routes are the ones Ray Serve LLM's ingress
serves (ray/llm/_internal/serve/core/ingress/ingress.py, DEFAULT_ENDPOINTS): /v1/models, /v1/completions,
/v1/chat/completions, streamed as server-sent events when asked.
"""

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from ray import serve
from ray_llm_eks_auth import ApiKeyIngressMixin

from tests.openai_server import MODEL, REPLY

app = FastAPI()


class StandInIngress:
    def __init__(self, model: str) -> None:
        self.model = model


@serve.deployment(ray_actor_options={"num_cpus": 0})
@serve.ingress(app)
class GuardedStandIn(ApiKeyIngressMixin, StandInIngress):
    @app.get("/v1/models")
    async def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "ray"}]}

    @app.post("/v1/completions")
    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse(
            {"object": "text_completion", "model": body["model"], "choices": [{"text": "".join(REPLY)}]}
        )

    @app.post("/v1/chat/completions")
    async def chat(self, request: Request) -> Any:
        body = await request.json()
        if not body.get("stream"):
            message = {"role": "assistant", "content": "".join(REPLY)}
            return JSONResponse(
                {"object": "chat.completion", "model": body["model"], "choices": [{"message": message}]}
            )

        async def events() -> Any:
            for token in REPLY:
                chunk = {
                    "object": "chat.completion.chunk",
                    "model": body["model"],
                    "choices": [{"delta": {"content": token}}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def build_app(args: dict[str, Any]) -> Any:
    """Takes the serve config's `args` as the PD builder does: the model, and `ingress_cls_config`'s kwargs."""
    kwargs = args["ingress_cls_config"]["ingress_extra_kwargs"]
    return GuardedStandIn.bind(args.get("model", MODEL), **kwargs)
