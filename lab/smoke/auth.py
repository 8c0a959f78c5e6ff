"""`--api-key-auth`: fresh keys in a keys file, a request without one refused, each key served, a rotated file
honoured within the ingress's reload interval, and no key in Ray's logs.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from infra.serving import serve_auth
from lab.smoke import deploy
from lab.smoke.logs import log_files
from lab.smoke.overrides import AUTH_KEYS_FILE
from serve_ext.ray_llm_eks_auth import RELOAD_SECONDS
from tools.probe import CheckResult, Report

# --api-key-auth: how many keys (two, as while a key is rotated).
AUTH_KEY_COUNT = 2
# A rotated keys file is honoured within the ingress's reload interval; three of them is a generous bound.
AUTH_ROTATION_TIMEOUT_S = 3 * RELOAD_SECONDS


def write_auth_files(auth_dir: Path, api_keys: tuple[str, ...]) -> None:
    """The keys the cluster mounts into the Ray pods (the serve-api-keys Secret), here as a file readable by this
    user alone; the auth package's zip is written with the stack's other code (app.py write_code_packages)."""
    keys_file = auth_dir / AUTH_KEYS_FILE
    keys_file.touch(mode=0o600)
    keys_file.write_text(serve_auth.keys_file_content(list(api_keys)))


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _error_code(body: str) -> str | None:
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


def check_auth(report: Report, model_id: str, api_keys: tuple[str, ...], keys_file: Path) -> str:
    """The API-key ingress in front of the real app: no key, a wrong key or a chat without a key get OpenAI's 401,
    each key is served, Serve's health route needs none; then the first key is retired and a new one added in the
    keys file (a rotation) and the time until the ingress honours both is measured. Returns the new key (for the
    log check); the keys file is put back afterwards."""
    models = f"{deploy.SERVE_URL}/v1/models"
    chat = {"model": model_id, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 1}
    no_key, body = deploy.http_request("GET", models)
    wrong = deploy.http_request("GET", models, headers=bearer(secrets.token_hex(32)))[0]
    chat_no_key = deploy.http_request("POST", f"{deploy.SERVE_URL}/v1/chat/completions", chat)[0]
    served = [deploy.http_request("GET", models, headers=bearer(key))[0] for key in api_keys]
    health = deploy.http_request("GET", f"{deploy.SERVE_URL}/-/healthz")[0]
    passed = (no_key, _error_code(body), wrong, chat_no_key, health) == (401, "invalid_api_key", 401, 401, 200)
    report.record(
        "auth",
        CheckResult(
            passed and served == [200] * len(api_keys),
            f"/v1/models without a key {no_key} ({_error_code(body)}), with a wrong key {wrong}; chat without a key "
            f"{chat_no_key}; each of {len(api_keys)} keys {served}; /-/healthz without a key {health}",
        ),
    )

    def status_with(key: str) -> int:
        return deploy.http_request("GET", models, headers=bearer(key))[0]

    new_key = secrets.token_hex(32)
    keys_file.write_text(serve_auth.keys_file_content([new_key, *api_keys[1:]]))
    start = time.monotonic()
    rotated = deploy.wait_for(
        "the rotated keys file",
        lambda: status_with(new_key) == 200 and status_with(api_keys[0]) == 401,
        AUTH_ROTATION_TIMEOUT_S,
        interval_s=0.5,
    )
    report.record(
        "auth_rotation",
        CheckResult(
            rotated,
            f"new key served and retired key refused {time.monotonic() - start:.1f} s after the keys file changed (the "
            f"ingress re-reads it every {RELOAD_SECONDS:g} s; in the cluster the kubelet's refresh of the mounted "
            "Secret comes first)",
        ),
    )
    keys_file.write_text(serve_auth.keys_file_content(list(api_keys)))
    restored = deploy.wait_for(
        "the restored keys file", lambda: status_with(api_keys[0]) == 200, AUTH_ROTATION_TIMEOUT_S
    )
    report.record("auth_restored", CheckResult(restored, "the first key is served again"))
    return new_key


def check_no_key_in_logs(report: Report, ray_temp_dir: Path, api_keys: tuple[str, ...]) -> None:
    """No key in any of the Ray session's log files after all the traffic: not even its first 16 characters."""
    files = log_files(ray_temp_dir)
    leaked = sorted(
        path.name for path in files if any(key[:16] in path.read_text(errors="replace") for key in api_keys)
    )
    report.record(
        "auth_logs",
        CheckResult(not leaked, f"no key in {len(files)} Ray log files" if not leaked else f"a key in {leaked}"),
    )
