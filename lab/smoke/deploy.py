"""Deploy through Ray's dashboard REST API (the call KubeRay makes) and wait for the app: the local endpoints, the
HTTP and `ray` CLI calls, the Serve status and its failure details.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

DASHBOARD_URL = "http://127.0.0.1:8265"
SERVE_URL = "http://127.0.0.1:8000"


def http_request(
    method: str, url: str, body: Any = None, timeout: float = 30, headers: Mapping[str, str] | None = None
) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, str(error)


def ray_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", *args], capture_output=True, text=True, check=False
    )


def wait_for(what: str, check: Callable[[], bool], timeout_s: float, interval_s: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() >= deadline:
            break
        time.sleep(interval_s)
    else:
        return True
    print(f"timed out after {timeout_s:.0f}s waiting for {what}", flush=True)
    return False


def serve_status(app_name: str) -> tuple[str, str]:
    """(application status, a one-line summary of its deployments) from the dashboard."""
    code, text = http_request("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    if code != 200:
        return "UNREACHABLE", text[:200]
    app = json.loads(text).get("applications", {}).get(app_name)
    if app is None:
        return "NOT_STARTED", ""
    deployments = ", ".join(f"{name} {d['status']}" for name, d in app.get("deployments", {}).items())
    return app["status"], deployments


def serve_failure_details(app_name: str) -> str:
    code, text = http_request("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    if code != 200:
        return text
    app = json.loads(text).get("applications", {}).get(app_name, {})
    lines = [f"application: {app.get('message', '')}"]
    lines += [f"{name}: {d.get('message', '')}" for name, d in app.get("deployments", {}).items()]
    return "\n".join(lines)


def deploy_and_wait(smoke: dict[str, Any], timeout_s: float) -> tuple[bool, float, str]:
    """PUT the config to the dashboard (as KubeRay does) and poll until RUNNING or failure."""
    app_name = smoke["applications"][0]["name"]
    start = time.monotonic()
    code, text = http_request("PUT", f"{DASHBOARD_URL}/api/serve/applications/", smoke, timeout=120)
    if code != 200:
        return False, 0.0, f"deploy refused ({code}): {text[:2000]}"
    last_line = ""
    last_print = 0.0
    while (elapsed := time.monotonic() - start) < timeout_s:
        status, deployments = serve_status(app_name)
        line = f"{status}; {deployments}"
        if line != last_line or elapsed - last_print >= 15:
            print(f"  [{elapsed:5.0f}s] {app_name} {line}", flush=True)
            last_line, last_print = line, elapsed
        if status == "RUNNING":
            return True, elapsed, "RUNNING"
        if status in ("DEPLOY_FAILED", "UNHEALTHY"):
            return False, elapsed, f"{status}\n{serve_failure_details(app_name)}"
        time.sleep(2)
    return False, timeout_s, f"not RUNNING after {timeout_s:.0f}s\n{serve_failure_details(app_name)}"


def serve_details() -> dict[str, Any] | None:
    code, text = http_request("GET", f"{DASHBOARD_URL}/api/serve/applications/")
    return json.loads(text) if code == 200 else None
