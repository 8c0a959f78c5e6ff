"""API keys in front of Ray Serve LLM's OpenAI ingress. Runs inside the Ray cluster, not under `pulumi up`.

Ray Serve LLM 2.58 ignores vLLM's `--api-key`; its PD builder takes the ingress class by import path
(`PDServingArgs.ingress_cls_config.ingress_cls`, ray/llm/_internal/serve/serving_patterns/prefill_decode/builder.py)
and wraps it with `make_fastapi_ingress` into a `serve.ingress(app)` deployment. A replica of such a deployment
calls the class's `__serve_build_asgi_app__` after the constructor, even when an app was given
(ray/serve/_private/replica.py, `_initialize_asgi_callable`), and serves what it returns: the hook here adds
`ApiKeyAuth` as the outermost middleware of that FastAPI app. Serve's proxy answers `/-/healthz` and `/-/routes`
itself before any application (ray/serve/_private/proxy.py, `_get_health_or_routes_reponse`), so health checks
never reach it and need no key.

Keys are read from a file (one per line: the mounted Kubernetes Secret), re-read every `RELOAD_SECONDS`, so a
key added to or removed from the Secret is honoured without a restart once the kubelet has refreshed the mount.
Keys are compared with `hmac.compare_digest` against every configured key, and never logged.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RELOAD_SECONDS = 10.0
# OpenAI's own answer to a missing or wrong key: 401 with this error object.
UNAUTHORIZED_BODY = json.dumps(
    {
        "error": {
            "message": "Missing or invalid API key: send `Authorization: Bearer <key>`.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
).encode()
UNAUTHORIZED_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(UNAUTHORIZED_BODY)).encode()),
    (b"www-authenticate", b'Bearer realm="ray-llm-eks"'),
]

logger = logging.getLogger("ray.serve")


class ApiKeys:
    """The keys in `path`, one per line (blank lines ignored); none when the file is missing (all refused)."""

    def __init__(self, path: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = Path(path)
        self._clock = clock
        self._read_at = -RELOAD_SECONDS
        self._keys: tuple[bytes, ...] = ()

    def _current(self) -> tuple[bytes, ...]:
        if self._clock() - self._read_at >= RELOAD_SECONDS:
            try:
                lines = self._path.read_bytes().splitlines()
            except OSError as error:
                logger.error("API keys file %s unreadable (%s): every request is refused", self._path, error.strerror)
                lines = []
            self._keys = tuple(line.strip() for line in lines if line.strip())
            self._read_at = self._clock()
        return self._keys

    def accepts(self, presented: bytes) -> bool:
        # Every key is compared, so the time taken does not say which one (or whether any) matched.
        matched = False
        for key in self._current():
            matched |= hmac.compare_digest(presented, key)
        return matched


def bearer_token(scope: Scope) -> bytes:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else b""
    return b""


class ApiKeyAuth:
    """ASGI middleware: HTTP and WebSocket requests without a configured key get OpenAI's 401."""

    def __init__(self, app: ASGIApp, keys_file: str) -> None:
        self.app = app
        self.keys = ApiKeys(keys_file)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.keys.accepts(bearer_token(scope)):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await send({"type": "http.response.start", "status": 401, "headers": UNAUTHORIZED_HEADERS})
            await send({"type": "http.response.body", "body": UNAUTHORIZED_BODY})


class ApiKeyIngressMixin:
    """Put before an ingress class: takes `api_keys_file` (from `ingress_extra_kwargs`) and guards its app."""

    def __init__(self, *args: Any, api_keys_file: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._api_keys_file = api_keys_file

    async def __serve_build_asgi_app__(self) -> Any:
        app = self.app  # the FastAPI app `serve.ingress` gave the replica, not started yet
        app.add_middleware(ApiKeyAuth, keys_file=self._api_keys_file)
        return app
