"""Ray's own token authentication, on the real component: a Ray 2.58 head started on CPU as KubeRay 1.7.0 starts one
with `authOptions: {mode: token}` (`ray start --head --block` with `RAY_AUTH_MODE=token` and `RAY_AUTH_TOKEN` in its
environment: ray-operator/controllers/ray/common/pod.go SetContainerTokenAuthEnvVars, vendored in
vendor/kuberay-v1.7.0/pod.go), dashboard on, every port free, with the stack's API-key app and the PD stand-in
deployed through the dashboard's `PUT /api/serve/applications/` as KubeRay deploys them (x-ray-authorization:
utils/dashboardclient/dashboard_httpclient.go setAuthHeader); and the stack's rollout reading it through a
port-forward to the head pod, the Kubernetes API stood in for. docs/ray-token-auth.md tells what these tests hold.

What Ray does here, in its source (ray 2.58.0, under site-packages/ray/): the dashboard head and the dashboard agent
wrap every route in `get_token_auth_middleware` (_private/authentication/http_token_authentication.py: 401 without a
token, 403 with a wrong one; the token read from `Authorization`, else `X-Ray-Authorization`, else the
`ray-authentication-token` cookie), with public paths listed in dashboard/http_server_head.py (`public_exact_paths`)
and dashboard/http_server_agent.py (`PUBLIC_EXACT_PATHS`); gRPC servers made by `create_grpc_server_with_interceptors`
(_private/grpc_utils.py: the Ray client server, util/client/server/proxier.py) check the `authorization` metadata
(_private/authentication/grpc_authentication_server_interceptor.py); the GCS and raylet check it in C++
(src/ray/rpc/authentication/). Serve's HTTP proxy (serve/_private/proxy.py) and the metrics export
(_private/prometheus_exporter.py `serve_http`, a plain WSGI server) have no such check.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import kubernetes.stream
import pytest
from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

from infra.serving.rollout import KubernetesReader
from infra.serving.rollout_status import ClusterRefused
from lab.serve_update_cpu import IMPORT_PATH as PD_IMPORT_PATH
from lab.serve_update_cpu import VARIANTS, Settings, app_args, free_port
from lab.smoke.deploy import http_request
from tests.openai_server import send_json
from tests.rayservice_parts import rayservice
from tests.rollout_states import raycluster, running_head, token_secret, with_token_auth
from tests.test_serve_auth import APP, KEYS, call, guarded_application
from tools.project import PROJECT_DIR

PD_APP, PD_PREFIX = "pd-standin", "/pd"
START_TIMEOUT_S = 120
SERVE_PATHS = ("/api/serve/applications/", "/api/jobs/")
# What the dashboard answers a request it refuses (http_token_authentication.py token_auth_middleware).
MISSING = (401, "Unauthorized: Missing authentication token")
INVALID = (403, "Forbidden: Invalid authentication token")
# The PD stand-in as lab.serve_update_cpu builds it, with no load time.
NO_WAIT = Settings(load_s=0, ingress_load_s=0, broken_load_s=0, interval_s=0, timeout_s=0, settle_s=0, step_timeout_s=0)


@dataclass(frozen=True)
class TokenRay:
    token: str
    dashboard: str
    agent: str
    gcs: str
    client: str
    metrics: str
    serve: str
    serve_config: dict[str, Any]


def bearer(token: str, header: str = "x-ray-authorization") -> dict[str, str]:
    return {header: f"Bearer {token}"}


def serve_config(workdir: Path, serve_port: int) -> dict[str, Any]:
    """The guarded app at `/` and the PD stand-in (ingress -> decode -> prefill by handle) at /pd."""
    pd_args = app_args(VARIANTS["1-a-side"], NO_WAIT, "v1", {"prefill": "v1", "decode": "v1"})
    pd = {"name": PD_APP, "import_path": PD_IMPORT_PATH, "route_prefix": PD_PREFIX, "args": pd_args}
    return {
        "http_options": {"host": "127.0.0.1", "port": serve_port},
        "applications": [guarded_application(workdir), pd],
    }


def start_command(workdir: Path, ports: Mapping[str, int]) -> list[str]:
    return [
        sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
        f"--port={ports['gcs']}", "--dashboard-host=127.0.0.1", f"--dashboard-port={ports['dashboard']}",
        f"--dashboard-agent-listen-port={ports['agent']}", f"--ray-client-server-port={ports['client']}",
        f"--metrics-export-port={ports['metrics']}", "--num-cpus=2", f"--temp-dir={workdir / 'ray'}",
        "--disable-usage-stats", "--include-dashboard=true",
    ]  # fmt: skip


def wait_until(what: str, done: Any, head: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not done():
        assert head.poll() is None, f"ray start exited {head.returncode} before {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: not after {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def apps_running(dashboard: str, token: str) -> bool:
    code, text = http_request("GET", f"{dashboard}/api/serve/applications/", headers=bearer(token))
    apps = (json.loads(text).get("applications") or {}) if code == 200 else {}
    failed = {name: app["message"] for name, app in apps.items() if app["status"] in ("DEPLOY_FAILED", "UNHEALTHY")}
    assert failed == {}
    return {name: app["status"] for name, app in apps.items()} == {APP: "RUNNING", PD_APP: "RUNNING"}


@pytest.fixture(scope="module")
def token_ray() -> Iterator[TokenRay]:
    """One Ray head with token auth for the module: started, both apps deployed and RUNNING; stopped by SIGTERM to
    its `ray start --block`, which kills what it started (ray/_private/node.py sigterm_handler)."""
    token = secrets.token_hex(32)  # as Ray's own generator makes one (authentication_token_generator.py)
    workdir = Path(tempfile.mkdtemp(prefix="raytok", dir="/tmp"))
    ports = {name: free_port() for name in ("gcs", "dashboard", "agent", "client", "metrics", "serve")}
    # The repo root for both apps' modules; no drain wait at SIGTERM (RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S).
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "PYTHONPATH": str(PROJECT_DIR)}
    env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    log = workdir / "ray-start.log"
    with log.open("wb") as out:
        head = subprocess.Popen(start_command(workdir, ports), env=env, stdout=out, stderr=subprocess.STDOUT)
    local = "http://127.0.0.1:{}".format
    ray = TokenRay(
        token,
        local(ports["dashboard"]),
        local(ports["agent"]),
        f"127.0.0.1:{ports['gcs']}",
        f"127.0.0.1:{ports['client']}",
        local(ports["metrics"]),
        local(ports["serve"]),
        serve_config(workdir, ports["serve"]),
    )
    try:
        wait_until(
            "the dashboard", lambda: http_request("GET", f"{ray.dashboard}/api/gcs_healthz")[0] == 200, head, log
        )
        put = http_request("PUT", f"{ray.dashboard}/api/serve/applications/", ray.serve_config, 120, bearer(token))
        assert put[0] == 200, put
        wait_until("both apps RUNNING", lambda: apps_running(ray.dashboard, token), head, log)
        yield ray
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
        shutil.rmtree(workdir, ignore_errors=True)


# --- the dashboard (8265): job submission and the Serve REST API KubeRay uses ---


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_the_serve_api_refuses_a_request_without_the_token(token_ray, method):
    body = token_ray.serve_config if method == "PUT" else None
    assert http_request(method, f"{token_ray.dashboard}/api/serve/applications/", body) == MISSING


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_jobs_api_refuses_a_request_without_the_token(token_ray, method):
    body = {"entrypoint": "echo submitted"} if method == "POST" else None
    assert http_request(method, f"{token_ray.dashboard}/api/jobs/", body) == MISSING


@pytest.mark.parametrize("path", SERVE_PATHS)
@pytest.mark.parametrize("header", ["x-ray-authorization", "Authorization"])
def test_a_wrong_token_is_refused(token_ray, path, header):
    wrong = secrets.token_hex(32)
    assert http_request("GET", f"{token_ray.dashboard}{path}", headers=bearer(wrong, header)) == INVALID


@pytest.mark.parametrize("path", SERVE_PATHS)
def test_the_token_in_x_ray_authorization_is_accepted(token_ray, path):
    """The header KubeRay 1.7.0's dashboard client sends, and the one left after the API server's service proxy drops
    `Authorization` (docs/ray-token-auth.md)."""
    code, text = http_request("GET", f"{token_ray.dashboard}{path}", headers=bearer(token_ray.token))
    assert code == 200
    assert json.loads(text) is not None


def test_the_serve_config_is_put_with_the_token(token_ray):
    """KubeRay's UpdateDeployments, the same config again: accepted; the apps build again (DEPLOYING a moment,
    measured) and run."""
    put = http_request(
        "PUT", f"{token_ray.dashboard}/api/serve/applications/", token_ray.serve_config, 120, bearer(token_ray.token)
    )
    assert put[0] == 200
    deadline = time.monotonic() + START_TIMEOUT_S
    while not apps_running(token_ray.dashboard, token_ray.token):
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_authorization_is_read_before_x_ray_authorization(token_ray):
    """Ray checks `Authorization` first and never falls back: a client whose `Authorization` carries another
    credential (a Kubernetes bearer token, were it passed on) is refused whatever its x-ray-authorization says."""
    headers = bearer(token_ray.token) | bearer(secrets.token_hex(32), "Authorization")
    assert http_request("GET", f"{token_ray.dashboard}/api/serve/applications/", headers=headers) == INVALID


def test_the_token_in_the_dashboards_cookie_is_accepted(token_ray):
    headers = {"Cookie": f"ray-authentication-token={token_ray.token}"}
    assert http_request("GET", f"{token_ray.dashboard}/api/serve/applications/", headers=headers)[0] == 200


# --- what needs no token: the probes, the metrics, the app's own clients ---


@pytest.mark.parametrize(
    ("server", "path"),
    [("dashboard", "/api/gcs_healthz"), ("agent", "/api/healthz"), ("agent", "/api/local_raylet_healthz")],
)
def test_the_health_checks_kuberays_probes_call_need_no_token(token_ray, server, path):
    """KubeRay 1.7.0's probes (common/pod.go initLivenessAndReadinessProbe): an HTTP GET of /api/healthz on the agent
    port (52365) from Ray 2.53, else `wget` of api/local_raylet_healthz (agent) and api/gcs_healthz (dashboard) piped
    to `grep success`; none sends a token."""
    code, text = http_request("GET", getattr(token_ray, server) + path)
    assert code == 200
    assert "success" in text


def test_the_metrics_export_needs_no_token(token_ray):
    """Prometheus scrapes the metrics port (8080 in KubeRay's pods) without a token."""
    code, text = http_request("GET", f"{token_ray.metrics}/metrics")
    assert code == 200
    assert "# TYPE ray_" in text


def test_serves_proxy_serves_a_request_with_only_the_apps_key(token_ray):
    status, _, payload = call("GET", "/v1/models", key=KEYS[0], base=token_ray.serve)
    assert status == 200
    assert json.loads(payload)["data"][0]["object"] == "model"


def test_serves_proxy_leaves_a_request_without_the_key_to_the_apps_own_401(token_ray):
    status, _, payload = call("GET", "/v1/models", base=token_ray.serve)
    assert status == 401
    assert json.loads(payload)["error"]["code"] == "invalid_api_key"


def test_the_ray_token_is_no_api_key(token_ray):
    status, _, payload = call("GET", "/v1/models", key=token_ray.token, base=token_ray.serve)
    assert status == 401
    assert json.loads(payload)["error"]["code"] == "invalid_api_key"


def test_serves_health_check_needs_no_token(token_ray):
    """KubeRay's worker readiness probe adds `wget` of -/healthz on the serving port (pod.go)."""
    status, _, payload = call("GET", "/-/healthz", base=token_ray.serve)
    assert status == 200
    assert payload == b"success"


def test_deployment_handles_call_through_with_the_token_on(token_ray):
    """The PD graph's ingress -> decode -> prefill calls (lab/serve_update_app.py) run between replicas, which
    carry the token from their environment (grpc_utils.py init_grpc_channel)."""
    status, _, payload = call("GET", PD_PREFIX, base=token_ray.serve)
    assert status == 200
    assert json.loads(payload) == {"ingress": "v1", "decode": "v1", "prefill": "v1"}


# --- GCS (6379) and the Ray client server (10001) ---


GCS_CLIENT = """
import json, sys
from ray._raylet import GcsClient
try:
    print(json.dumps({"cluster_id": GcsClient(address=sys.argv[1]).cluster_id.hex()}))
except Exception as error:
    print(json.dumps({"error": f"{type(error).__module__}.{type(error).__name__}", "message": str(error)}))
"""
DRIVER = """
import json, sys, ray
try:
    ray.init(address=sys.argv[1], log_to_driver=False)
    print(json.dumps({"answer": ray.get(ray.put(42))}))
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error), "cause": str(error.__cause__)}))
"""


def run_python(code: str, address: str, token: str | None) -> dict[str, Any]:
    """`code` in a fresh interpreter, as a client on another machine: the token in its environment or none."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_AUTH_")}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token} if token else {}
    # One attempt to reach the GCS, not twenty a second apart (ray/_private/node.py _init_gcs_client).
    env["RAY_gcs_server_port_wait_time_s"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code, address], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize("token", [None, "wrong"], ids=["no-token", "wrong-token"])
def test_a_gcs_client_without_the_token_is_refused(token_ray, token):
    answer = run_python(GCS_CLIENT, token_ray.gcs, token and secrets.token_hex(32))
    assert answer["error"] == "ray.exceptions.AuthenticationError"
    assert answer["message"].startswith("RPC error: InvalidAuthToken: Authentication token is missing or incorrect")


def test_a_gcs_client_with_the_token_is_answered(token_ray):
    assert len(run_python(GCS_CLIENT, token_ray.gcs, token_ray.token)["cluster_id"]) == 56


def test_a_driver_without_the_token_cannot_connect(token_ray):
    answer = run_python(DRIVER, token_ray.gcs, None)
    assert answer["error"] == "ConnectionError"
    assert "InvalidAuthToken: Authentication token is missing or incorrect" in answer["cause"]


def test_a_driver_with_the_token_runs(token_ray):
    assert run_python(DRIVER, token_ray.gcs, token_ray.token) == {"answer": 42}


def ping_ray_client(address: str, metadata: list[tuple[str, str]]) -> Any:
    """The Ray client's first call (util/client/worker.py ping_server), answered by the proxier itself."""
    with grpc.insecure_channel(address) as channel:
        request = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
        return ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(request, timeout=30, metadata=metadata)


def test_the_ray_client_server_refuses_a_call_without_the_token(token_ray):
    with pytest.raises(grpc.RpcError) as refused:
        ping_ray_client(token_ray.client, [])
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert refused.value.details() == "Invalid or missing authentication token"


def test_the_ray_client_server_answers_a_call_with_the_token(token_ray):
    assert json.loads(ping_ray_client(token_ray.client, [("authorization", f"Bearer {token_ray.token}")]).json) == {}


# --- the rollout's reader: the API server stood in for, the port-forward to the real dashboard ---


NAMESPACE, CLUSTER, CREDENTIAL = "inference", "ray-llm-abcde", "kubernetes-credential"
HEAD_POD = f"{CLUSTER}-head-x7k2p"


class ApiServer(http.server.ThreadingHTTPServer):
    """The API server's REST reads as the rollout's reader makes them, answered from `objects` to the caller's
    credential: the RayCluster, its token Secret, the head pod."""

    def __init__(self, objects: dict[str, Any]) -> None:
        super().__init__(("127.0.0.1", 0), ApiHandler)
        self.objects = objects


class ApiHandler(http.server.BaseHTTPRequestHandler):
    server: ApiServer

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {CREDENTIAL}":
            return send_json(self, {"kind": "Status", "code": 401}, 401)
        found = self.server.objects.get(self.path.split("?")[0])
        return send_json(self, found) if found else send_json(self, {"kind": "Status", "code": 404}, 404)

    def log_message(self, *_: Any) -> None:
        pass


class Tunnel:
    """What kubernetes.stream.portforward gives: the forwarded port as a connected socket, here to the real head's
    dashboard (kubernetes/stream/ws_client.py PortForward.socket)."""

    def __init__(self, dashboard: str, port: int) -> None:
        host, dashboard_port = dashboard.removeprefix("http://").split(":")
        self.port, self.sock = port, socket.create_connection((host, int(dashboard_port)))

    def socket(self, port: int) -> socket.socket:
        assert port == self.port
        return self.sock

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def api_server(token_ray, dev, monkeypatch) -> Iterator[ApiServer]:
    """The API to the token-auth head, with the RayCluster KubeRay 1.7.0 builds for the stack's RayService with
    `authOptions: {mode: token}`, the Secret it generates for it (tests/rollout_states.py) and its running head pod;
    a port-forward to that pod's 8265 reaches the real dashboard."""
    objects = {
        f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters/{CLUSTER}": with_token_auth(
            raycluster(CLUSTER, rayservice(dev)), mode="token"
        ),
        f"/api/v1/namespaces/{NAMESPACE}/secrets/{CLUSTER}": token_secret(CLUSTER, CLUSTER, token_ray.token),
        f"/api/v1/namespaces/{NAMESPACE}/pods": {"items": [running_head(CLUSTER, HEAD_POD)]},
    }

    def portforward(connect: Any, pod: str, namespace: str, ports: str) -> Tunnel:
        assert (pod, namespace, ports) == (HEAD_POD, NAMESPACE, "8265")
        return Tunnel(token_ray.dashboard, int(ports))

    monkeypatch.setattr(kubernetes.stream, "portforward", portforward)
    server = ApiServer(objects)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def api_reader(server: ApiServer) -> KubernetesReader:
    kubeconfig = {
        "apiVersion": "v1",
        "clusters": [{"name": "eks", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "deployer", "user": {"token": CREDENTIAL}}],
        "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "deployer"}}],
        "current-context": "eks",
    }
    return KubernetesReader(json.dumps(kubeconfig), NAMESPACE, "ray-llm", "app=ray-llm")


def test_the_rollout_reads_serve_on_the_head_with_the_clusters_token(token_ray, api_server):
    """infra/serving/rollout.py KubernetesReader: the RayCluster, its Secret, the head pod, then Serve's status
    through the port-forward with the token in x-ray-authorization, as the real dashboard answers it."""
    details = api_reader(api_server).serve_details(CLUSTER)
    assert {name: app["status"] for name, app in details["applications"].items()} == {APP: "RUNNING", PD_APP: "RUNNING"}


def test_without_the_token_the_rollout_is_refused_with_rays_words(api_server):
    """A RayCluster whose spec has no token mode while Ray runs with it (RAY_AUTH_MODE set by hand) gets no token
    from the reader: Ray's 401 comes back and fails the rollout, saying why."""
    path = f"/apis/ray.io/v1/namespaces/{NAMESPACE}/rayclusters/{CLUSTER}"
    api_server.objects[path] = {**api_server.objects[path], "spec": {}}
    with pytest.raises(ClusterRefused, match="HTTP 401 b'Unauthorized: Missing authentication token'"):
        api_reader(api_server).serve_details(CLUSTER)
