"""API keys on the serve endpoint, proven on the real component: Ray Serve 2.58 on CPU, the auth package shipped
as the stack ships it (a zip named by `runtime_env.py_modules`' `file://` URI, deployed through the controller's
`apply_config`, the call behind the dashboard's `PUT /api/serve/applications/` that KubeRay makes), in front of a
stand-in for Ray Serve LLM's OpenAI ingress (tests/serve_auth_app.py; the real ingress needs vLLM).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from infra.serving import serve_auth
from infra.serving.code_package import SERVE_EXT, package_zip
from tests.conftest import start_local_ray
from tools.project import PROJECT_DIR

KEYS = ["sk-rotate-in-0123456789abcdefghij", "sk-rotate-out-9876543210zyxwvutsrq"]
WRONG_KEY = "sk-not-configured-00000000000000000"
PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
APP = "guarded"
GUARDED_ROUTES = [("GET", "/v1/models", None), ("POST", "/v1/completions", {"model": "m", "prompt": "hi"})]
GUARDED_ROUTES.append(("POST", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}))


def guarded_application(workdir: Path) -> dict[str, Any]:
    """The guarded stand-in as the stack's serve config names its app: the auth package as a zip under
    `workdir/code` named by a `file://` URI, the keys in `workdir/keys` (the mounted Secret's file)."""
    code, keys_file = workdir / "code", workdir / "keys"
    code.mkdir()
    (code / serve_auth.CODE.zip_name()).write_bytes(serve_auth.CODE.zip())
    keys_file.write_text(serve_auth.keys_file_content(KEYS))
    return {
        "name": APP,
        "import_path": "tests.serve_auth_app:build_app",
        "route_prefix": "/",
        "runtime_env": {"py_modules": [serve_auth.CODE.uri(str(code))]},
        "args": serve_auth.ingress_args(str(keys_file)),
    }


@pytest.fixture(scope="module")
def serve_app() -> Iterator[Path]:
    """Ray on 2 CPUs with the guarded stand-in deployed from a serve config; yields Ray's log directory."""
    ray = pytest.importorskip("ray", reason="requirements-test.txt installs ray[serve]")
    from ray import serve
    from ray.serve._private.api import serve_start
    from ray.serve.schema import ServeDeploySchema

    workdir = Path(tempfile.mkdtemp(prefix="rayauth", dir="/tmp"))
    config = {"applications": [guarded_application(workdir)]}
    with pytest.MonkeyPatch.context() as patch:
        # The repo root, for the stand-in's module; ray_llm_eks_auth is not under it (serve_ext/ is no package).
        patch.setenv("PYTHONPATH", str(PROJECT_DIR))
        start_local_ray(workdir / "ray")
    try:
        client = serve_start(http_options={"host": "127.0.0.1", "port": PORT})
        client.deploy_apps(ServeDeploySchema.model_validate(config))
        deadline = time.monotonic() + 120
        while (status := serve.status().applications.get(APP)) is None or status.status != "RUNNING":
            assert status is None or status.status not in ("DEPLOY_FAILED", "UNHEALTHY"), status.message
            assert time.monotonic() < deadline, f"not RUNNING after 120 s: {status}"
            time.sleep(0.5)
        yield workdir / "ray" / "session_latest" / "logs"
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


def call(
    method: str, path: str, body: dict[str, Any] | None = None, key: str | None = None, base: str = BASE
) -> tuple[int, Any, Any]:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


@pytest.mark.parametrize(("method", "path", "body"), GUARDED_ROUTES)
def test_request_without_a_key_gets_openais_401(serve_app: Path, method: str, path: str, body: Any) -> None:
    status, headers, payload = call(method, path, body)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    error = json.loads(payload)["error"]
    assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"


@pytest.mark.parametrize("authorization", [f"Bearer {WRONG_KEY}", f"Basic {KEYS[0]}", "Bearer ", KEYS[0]])
def test_a_wrong_key_or_scheme_gets_401(serve_app: Path, authorization: str) -> None:
    request = urllib.request.Request(BASE + "/v1/models", headers={"Authorization": authorization})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(("method", "path", "body"), GUARDED_ROUTES)
def test_each_configured_key_is_served(serve_app: Path, key: str, method: str, path: str, body: Any) -> None:
    status, _, _ = call(method, path, body, key=key)
    assert status == 200


def test_an_openai_client_with_a_key_lists_models_and_streams(serve_app: Path) -> None:
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key=KEYS[1], max_retries=0)
    assert [model.id for model in client.models.list()] == ["qwen3.5-9b"]
    stream = client.chat.completions.create(
        model="qwen3.5-9b", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    tokens = [chunk.choices[0].delta.content for chunk in stream]
    assert len(tokens) > 1 and "".join(tokens) == "Prefill and decode run on separate GPUs."


def test_an_openai_client_without_the_key_is_refused(serve_app: Path) -> None:
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key=WRONG_KEY, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.code == "invalid_api_key"


@pytest.mark.parametrize("path", ["/-/healthz", "/-/routes"])
def test_serves_health_routes_need_no_key(serve_app: Path, path: str) -> None:
    """KubeRay's probes ask the proxy's /-/healthz; Serve's proxy answers these itself, before any application
    (ray/serve/_private/proxy.py, `_get_health_or_routes_reponse`)."""
    status, _, _ = call("GET", path)
    assert status == 200


def test_no_key_reaches_rays_logs(serve_app: Path) -> None:
    for key in (*KEYS, WRONG_KEY):  # both accepted and refused keys were sent by the tests above
        call("GET", "/v1/models", key=key)
    logs = [path for path in serve_app.rglob("*") if path.is_file()]
    assert any("guarded" in path.name or "ServeReplica" in path.name for path in logs), "no replica log written"
    leaks = [path.name for path in logs for key in (*KEYS, WRONG_KEY) if key.encode() in path.read_bytes()]
    assert leaks == []


def test_the_package_zip_is_the_same_bytes_every_build() -> None:
    """Ray caches a py_modules package by its URI (ray/_private/runtime_env/py_modules.py): the name carries the
    digest of bytes that depend only on the sources, so a rebuild is no diff and a code change a new URI."""
    first = serve_auth.CODE.zip()
    package_zip.cache_clear()
    assert serve_auth.CODE.zip() == first
    assert serve_auth.CODE.zip_name().startswith(f"{serve_auth.PACKAGE}-")
    assert os.path.basename(serve_auth.CODE.uri()) == serve_auth.CODE.zip_name()


def test_a_rotated_keys_file_is_honoured_after_the_reload_interval(tmp_path: Path) -> None:
    """A mounted Secret changes in place (the kubelet swaps the files), so a key added or removed there is used
    without a restart once the file is read again."""
    sys.path.insert(0, str(SERVE_EXT))
    try:
        from ray_llm_eks_auth import RELOAD_SECONDS, ApiKeys
    finally:
        sys.path.remove(str(SERVE_EXT))
    now = [0.0]
    keys_file = tmp_path / "keys"
    keys_file.write_text(serve_auth.keys_file_content(KEYS))
    keys = ApiKeys(str(keys_file), clock=lambda: now[0])
    assert keys.accepts(KEYS[1].encode())
    keys_file.write_text(serve_auth.keys_file_content([WRONG_KEY, KEYS[0]]))
    assert keys.accepts(KEYS[1].encode())  # until the next read
    now[0] += RELOAD_SECONDS
    assert not keys.accepts(KEYS[1].encode()) and keys.accepts(WRONG_KEY.encode())
    keys_file.unlink()
    now[0] += RELOAD_SECONDS
    assert not keys.accepts(KEYS[0].encode())  # an unreadable file refuses everyone
