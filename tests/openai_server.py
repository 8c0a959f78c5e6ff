"""A real local OpenAI-compatible server for the tools' tests: what Ray Serve LLM's ingress answers, and, with
`api_keys` set, what the stack's API-key ingress answers a request without one of them (serve_ext/ray_llm_eks_auth:
401 with OpenAI's invalid_api_key error)."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "qwen3.5-9b"
REPLY = ["Prefill", " and", " decode", " run", " on", " separate", " GPUs", "."]


def send_json(handler: BaseHTTPRequestHandler, body: dict[str, Any], status: int = 200) -> None:
    """One JSON answer, as the local stand-in servers of the tests give it."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class OpenAIHandler(BaseHTTPRequestHandler):
    """GET /v1/models and POST /v1/chat/completions (streamed as server-sent events), like vLLM's server."""

    server: OpenAIServer

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, body: dict[str, Any]) -> None:
        send_json(self, body)

    def _refused(self) -> bool:
        """Answers 401 as the auth ingress does when keys are on and the request has none of them."""
        keys = self.server.current_keys()
        if not keys or self.headers.get("Authorization") in {f"Bearer {key}" for key in keys}:
            return False
        error = {"message": "invalid key", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}
        send_json(self, {"error": error}, status=401)
        return True

    def do_GET(self) -> None:
        if self.path == "/-/healthz":  # Serve's proxy answers it before any application (ray/serve/_private/proxy.py)
            send_json(self, {"status": "success"})
            return
        if self._refused():
            return
        if self.path != "/v1/models":
            self.send_error(404)
            return
        models = [
            {"id": model, "object": "model", "created": 1764440000, "owned_by": "ray"} for model in self.server.models
        ]
        self._json({"object": "list", "data": models})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self._refused():
            return
        self.server.requests.append(request)
        if self.path != "/v1/chat/completions" or not request.get("stream"):
            self.send_error(400)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764440000, "model": request["model"]}
        deltas = [{"role": "assistant", "content": ""}, *({"content": token} for token in self.server.tokens)]
        events = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        usage = {
            "prompt_tokens": 14,
            "completion_tokens": len(self.server.tokens),
            "total_tokens": 14 + len(self.server.tokens),
        }
        events.append({**base, "choices": [], "usage": usage})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.002)
        self.wfile.write(b"data: [DONE]\n\n")


class OpenAIServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), OpenAIHandler)
        self.reset()

    def reset(self) -> None:
        self.models = [MODEL]
        self.tokens = list(REPLY)
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str] = []  # none: every request is answered
        # Where set, the keys are this file's lines instead, read on every request (the real ingress re-reads its
        # keys file every RELOAD_SECONDS).
        self.keys_file: Path | None = None

    def current_keys(self) -> list[str]:
        if self.keys_file is not None:
            return [line.strip() for line in self.keys_file.read_text().splitlines() if line.strip()]
        return self.api_keys

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"
