"""`python -m tools.verify` against recorded Kubernetes responses and a real local OpenAI-compatible server.

No cluster and no network: Kubernetes answers come from `tests/fixtures/verify/` (each test changes
a copy to make its failure), the API is an HTTP server on 127.0.0.1 speaking OpenAI's models and
streamed chat-completions (SSE), and `pulumi` / `kubectl` are small stand-in scripts where the
subprocess path itself is under test.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

import pytest

from tests.openai_server import MODEL
from tests.schemas import core_object_errors, rayservice_errors
from tools.verify import main
from tools.verify_access import KubernetesCluster, StackOutputs

FIXTURES = Path(__file__).parent / "fixtures" / "verify"
OUTPUTS_FILE = FIXTURES / "outputs.json"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


class RecordedCluster:
    """The verify_access.Cluster interface answered from the fixtures; selectors are matched like the API server."""

    def __init__(self) -> None:
        self.nodes = load("nodes.json")["items"]
        self.rayservice: dict[str, Any] | None = load("rayservice.json")
        self.service: dict[str, Any] | None = load("serve-service.json")
        self.pods = load("worker-pods.json")["items"]
        self.heads = load("head-pods.json")["items"]
        self.logs = {path.stem: path.read_text() for path in (FIXTURES / "logs").glob("*.txt")}
        self.nccl = {path.stem: path.read_text() for path in (FIXTURES / "nccl").glob("*.txt")}
        self.commands: dict[str, list[str]] = {}

    @staticmethod
    def _selected(objects: list[dict[str, Any]], label_selector: str) -> list[dict[str, Any]]:
        wanted = dict(term.split("=", 1) for term in label_selector.split(","))
        return [obj for obj in objects if wanted.items() <= obj["metadata"].get("labels", {}).items()]

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return self._selected(self.nodes, label_selector)

    def get_rayservice(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.rayservice
        return (
            found
            if found and (found["metadata"]["namespace"], found["metadata"]["name"]) == (namespace, name)
            else None
        )

    def get_service(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.service
        return (
            found
            if found and (found["metadata"]["namespace"], found["metadata"]["name"]) == (namespace, name)
            else None
        )

    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        pods = [pod for pod in self.pods + self.heads if pod["metadata"]["namespace"] == namespace]
        return self._selected(pods, label_selector)

    def exec_in_pod(self, namespace: str, pod: str, container: str, command: list[str]) -> str:
        assert container == "ray-worker"
        self.commands[pod] = command
        return (self.logs if command[0] == "grep" else self.nccl).get(pod, "")


@pytest.fixture
def cluster() -> RecordedCluster:
    return RecordedCluster()


def run_verify(cluster: RecordedCluster, *args: str, base_url: str | None = None) -> int:
    endpoint = ["--base-url", base_url] if base_url else []
    return main(["--outputs-file", str(OUTPUTS_FILE), *endpoint, *args], connect=lambda kubeconfig: cluster)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- the fixtures are real-shaped ---


@pytest.mark.parametrize("name", ["nodes.json", "serve-service.json", "worker-pods.json", "head-pods.json"])
def test_recorded_core_objects_match_kubernetes_schemas(name):
    assert core_object_errors(load(name)) == []


def test_recorded_rayservice_matches_the_crd_status_and_all():
    assert rayservice_errors(load("rayservice.json")) == []


# --- pass path ---


def test_a_healthy_deployment_passes(cluster, api, capsys):
    assert run_verify(cluster, base_url=api.base_url) == 0
    out = capsys.readouterr().out
    for step in ("[1/5] GPU nodes", "[2/5] RayService", "[3/5] Ray head", "[4/5] OpenAI API", "[5/5] NIXL"):
        assert step in out
    assert out.count("[PASS] ") == 5
    assert "[PASS] head: Ray head ready; GCS fault tolerance: the stack's store" in out
    assert (
        "ip-10-0-7-41.sa-east-1.compute.internal (sa-east-1a): Ready, nvidia.com/gpu=1, vpc.amazonaws.com/efa=1" in out
    )
    assert "application ray-llm: RUNNING" in out
    assert f"models: {MODEL}" in out
    assert "8 tokens, time to first token" in out and "tokens/s" in out
    assert "ray-llm-x7kq2-gpu-workers-worker-b9xqt: LIBFABRIC x2" in out
    # The recorded serveConfigV2 predates kv_buffer_device: vLLM's KVTransferConfig default applies, the
    # platform's device type, cuda on a GPU (vllm/config/kv_transfer.py kv_buffer_device_default_factory).
    assert "KV buffers in memory of: prefill cuda, decode cuda" in out
    assert out.rstrip().endswith("VERDICT: PASS (all 5 required checks passed)")
    (chat,) = api.requests
    assert chat["model"] == MODEL and chat["stream"] is True


def test_logs_are_read_the_way_the_sample_reads_them(cluster, api):
    run_verify(cluster, base_url=api.base_url)
    grep = cluster.commands["ray-llm-x7kq2-gpu-workers-worker-m4zfw"]
    assert grep[:2] == ["grep", "-rhE"] and grep[-1] == "/tmp/ray/session_latest/logs/"
    assert "Backend (LIBFABRIC|UCX) was instantiated" in grep


def test_the_stacks_kubeconfig_is_used_from_a_private_file_then_removed(cluster, api):
    seen: dict[str, Any] = {}

    def connect(kubeconfig: str | None) -> RecordedCluster:
        path = Path(kubeconfig or "")
        seen.update(path=path, text=path.read_text(), mode=path.stat().st_mode & 0o777)
        return cluster

    assert main(["--outputs-file", str(OUTPUTS_FILE), "--base-url", api.base_url], connect=connect) == 0
    assert seen["text"] == load("outputs.json")["kubeconfig"]
    assert seen["mode"] == 0o600
    assert not seen["path"].exists()


def test_verify_reports_where_the_deployed_stack_keeps_kv_for_transfer(cluster, api, capsys):
    """kv_buffer_device is read from the RayService's serveConfigV2, as `infra.serving.serve_config` emits it."""
    assert cluster.rayservice is not None
    spec = cluster.rayservice["spec"]
    decode_in_cpu = "engine_id: decode\n          kv_buffer_device: cpu"
    spec["serveConfigV2"] = spec["serveConfigV2"].replace("engine_id: decode", decode_in_cpu)
    assert run_verify(cluster, base_url=api.base_url) == 0
    assert "KV buffers in memory of: prefill cuda, decode cpu" in capsys.readouterr().out


# --- each failure ---


def test_ucx_backend_fails(cluster, api, capsys):
    cluster.logs["ray-llm-x7kq2-gpu-workers-worker-m4zfw"] = (
        "INFO 11-29 18:27:44 [_api.py:361] Backend UCX was instantiated\n"
    )
    assert run_verify(cluster, base_url=api.base_url) == 1
    out = capsys.readouterr().out
    assert "ray-llm-x7kq2-gpu-workers-worker-m4zfw: UCX x1: NIXL fell back from EFA" in out
    assert "[FAIL] nixl_backend: 1 of 2 workers do not use LIBFABRIC" in out
    assert "VERDICT: FAIL (1 of 5 required checks failed: nixl_backend)" in out


def test_no_backend_line_fails(cluster, api, capsys):
    cluster.logs.clear()
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "no NIXL backend line in /tmp/ray/session_latest/logs/" in capsys.readouterr().out


def test_missing_efa_resource_fails(cluster, api, capsys):
    del cluster.nodes[1]["status"]["allocatable"]["vpc.amazonaws.com/efa"]
    assert run_verify(cluster, base_url=api.base_url) == 1
    out = capsys.readouterr().out
    assert "ip-10-0-21-188.sa-east-1.compute.internal (sa-east-1a): no vpc.amazonaws.com/efa" in out
    assert "[FAIL] gpu_nodes: 1 of 2 nodes of node group gpu-workers are ready with GPUs and EFA; 2 needed" in out


def test_one_gpu_node_is_not_enough(cluster, api, capsys):
    cluster.nodes.pop()
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "[FAIL] gpu_nodes: 1 of 1 nodes of node group gpu-workers" in capsys.readouterr().out


def test_endpoint_down_fails(cluster, capsys):
    assert run_verify(cluster, base_url=f"http://127.0.0.1:{closed_port()}/v1") == 1
    out = capsys.readouterr().out
    assert "[FAIL] completion: the endpoint did not answer: Connection error." in out
    assert "VERDICT: FAIL (1 of 5 required checks failed: completion)" in out


def test_empty_completion_fails(cluster, api, capsys):
    api.tokens = []
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "[FAIL] completion: the chat completion returned no tokens" in capsys.readouterr().out


def test_model_missing_from_the_list_fails(cluster, api, capsys):
    api.models = ["some-other-model"]
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert f"[FAIL] completion: /v1/models does not list {MODEL}" in capsys.readouterr().out


def test_rayservice_not_running_fails(cluster, api, capsys):
    assert cluster.rayservice is not None
    cluster.rayservice["status"]["serviceStatus"] = ""
    cluster.rayservice["status"]["conditions"][0]["status"] = "False"
    cluster.service = None
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "[FAIL] rayservice: the RayService is not Running yet" in capsys.readouterr().out


def test_missing_serve_service_fails(cluster, api, capsys):
    cluster.service = None
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "[FAIL] rayservice: service ray-llm-serve-svc does not exist" in capsys.readouterr().out


def test_missing_rayservice_fails_every_check_that_needs_it(cluster, api, capsys):
    cluster.rayservice = None
    assert run_verify(cluster, base_url=api.base_url) == 1
    out = capsys.readouterr().out
    assert "[FAIL] rayservice: RayService inference/ray-llm does not exist" in out
    assert "[FAIL] nixl_backend: no running worker pod of the RayService's active Ray cluster" in out


def test_an_api_error_fails_its_check_not_the_run(cluster, api, capsys):
    def broken(namespace: str, pod: str, container: str, command: list[str]) -> str:
        raise RuntimeError("pods/exec is forbidden")

    cluster.exec_in_pod = broken  # type: ignore[method-assign]
    assert run_verify(cluster, base_url=api.base_url) == 1
    out = capsys.readouterr().out
    assert "[FAIL] nixl_backend: RuntimeError: pods/exec is forbidden" in out
    assert out.count("[PASS] ") == 4


# --- the optional NCCL check ---


def test_nccl_reports_bus_bandwidth_over_efa(cluster, api, capsys):
    assert run_verify(cluster, "--nccl", base_url=api.base_url) == 0
    out = capsys.readouterr().out
    assert "[6/6] NCCL all-reduce between two GPU nodes (optional)" in out
    assert "[PASS] nccl: bus bandwidth 2.47 GB/s (256 MiB all-reduce, 108512 us)" in out
    assert "libfabric provider: efa" in out
    ranks = [cluster.commands[pod["metadata"]["name"]] for pod in cluster.pods]
    assert [command[1] for command in ranks] == ["RANK=0", "RANK=1"]
    assert all("INIT_METHOD=tcp://10.0.7.203:29517" in command for command in ranks)


def test_nccl_over_sockets_warns_without_failing_the_verdict(cluster, api, capsys):
    cluster.nccl = {
        pod: text.replace("NET/OFI Selected provider is efa", "NET/Socket") for pod, text in cluster.nccl.items()
    }
    assert run_verify(cluster, "--nccl", base_url=api.base_url) == 0
    out = capsys.readouterr().out
    assert "libfabric provider: none (NCCL used sockets)" in out
    assert "[WARN] nccl: bus bandwidth" in out
    assert "VERDICT: PASS (all 5 required checks passed)" in out


# --- outputs ---


def test_outputs_come_from_pulumi_with_secrets_shown(cluster, api, tmp_path, monkeypatch, capsys):
    arguments = tmp_path / "pulumi-arguments"
    fake_pulumi = tmp_path / "pulumi"
    fake_pulumi.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(arguments)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
        f"print(open({str(OUTPUTS_FILE)!r}).read())\n"
    )
    fake_pulumi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["--stack", "dev", "--base-url", api.base_url], connect=lambda kubeconfig: cluster) == 0
    assert arguments.read_text() == "stack output --json --show-secrets --stack dev"


def test_no_pulumi_cli_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["--stack", "dev"]) == 2
    assert "the pulumi CLI is not installed: install it, or pass --outputs-file" in capsys.readouterr().err


def test_outputs_of_a_stack_never_deployed_are_a_clear_error(tmp_path, capsys):
    partial = tmp_path / "outputs.json"
    partial.write_text(json.dumps({"namespace": "inference"}))
    assert main(["--outputs-file", str(partial)]) == 2
    assert "stack outputs lack rayServiceName, modelId, gpuNodeGroupName, serveEndpoint" in capsys.readouterr().err


def test_serve_service_and_port_come_from_the_endpoint_output():
    outputs = StackOutputs.from_json(load("outputs.json"))
    assert (outputs.serve_service, outputs.serve_port) == ("ray-llm-serve-svc", 8000)


# --- the port-forward, through a stand-in kubectl ---


def fake_kubectl(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "kubectl"
    script.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    script.chmod(0o755)
    return script


def test_port_forward_reaches_the_api_through_kubectl(cluster, api, tmp_path, capsys):
    arguments = tmp_path / "kubectl-arguments"
    port = api.server_address[1]
    kubectl = fake_kubectl(
        tmp_path,
        f"open({str(arguments)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
        f"print('Forwarding from 127.0.0.1:{port} -> 8000', flush=True)\n"
        "time.sleep(60)",
    )
    assert run_verify(cluster, "--kubectl", str(kubectl)) == 0
    assert f"endpoint http://127.0.0.1:{port}/v1" in capsys.readouterr().out
    assert arguments.read_text().endswith("port-forward -n inference svc/ray-llm-serve-svc :8000")
    assert arguments.read_text().startswith("--kubeconfig ")


def test_a_failed_port_forward_fails_the_api_check(cluster, tmp_path, capsys):
    kubectl = fake_kubectl(
        tmp_path, "print('error: services \"ray-llm-serve-svc\" not found', file=sys.stderr); sys.exit(1)"
    )
    assert run_verify(cluster, "--kubectl", str(kubectl)) == 1
    assert 'services "ray-llm-serve-svc" not found' in capsys.readouterr().out


# --- the real Kubernetes client, against a local API server ---


class KubernetesAPIHandler(BaseHTTPRequestHandler):
    """Serves the fixtures at the paths the official client asks for."""

    ROUTES: ClassVar[dict[str, str]] = {
        "/api/v1/nodes": "nodes.json",
        "/apis/ray.io/v1/namespaces/inference/rayservices/ray-llm": "rayservice.json",
        "/api/v1/namespaces/inference/services/ray-llm-serve-svc": "serve-service.json",
        "/api/v1/namespaces/inference/pods": "worker-pods.json",
    }
    server: KubernetesAPIServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requested.append(unquote(self.path))
        name = self.ROUTES.get(self.path.split("?")[0])
        status, body = (200, (FIXTURES / name).read_bytes()) if name else (404, b'{"kind":"Status","code":404}')
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class KubernetesAPIServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), KubernetesAPIHandler)
        self.requested: list[str] = []


def test_the_kubernetes_client_reads_the_same_objects(tmp_path):
    server = KubernetesAPIServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "local",
                "clusters": [{"name": "local", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": "local"}}],
                "users": [{"name": "local", "user": {"token": "test"}}],
            }
        )
    )
    try:
        client = KubernetesCluster(str(kubeconfig))
        assert client.list_nodes("eks.amazonaws.com/nodegroup=gpu-workers") == load("nodes.json")["items"]
        assert client.get_rayservice("inference", "ray-llm") == load("rayservice.json")
        assert client.get_service("inference", "ray-llm-serve-svc") == load("serve-service.json")
        assert client.get_service("inference", "absent") is None
        assert client.list_pods("inference", "ray.io/node-type=worker") == load("worker-pods.json")["items"]
    finally:
        server.shutdown()
        server.server_close()
    assert "/api/v1/nodes?labelSelector=eks.amazonaws.com/nodegroup=gpu-workers" in server.requested


def test_verify_reads_what_the_stack_exports(dev):
    """The recorded outputs are the dev stack's own; verify finds every key it needs in a fresh run."""
    exported = StackOutputs.from_json(dev.outputs)
    recorded = StackOutputs.from_json(load("outputs.json"))
    assert (exported.namespace, exported.ray_service_name, exported.model_id) == ("inference", "ray-llm", MODEL)
    assert (exported.serve_service, exported.serve_port) == (recorded.serve_service, recorded.serve_port)
    assert exported.gpu_node_group_name == recorded.gpu_node_group_name


@pytest.mark.parametrize("status", ["DEPLOY_FAILED", "UNHEALTHY"])
def test_a_failed_application_fails_though_kuberay_says_ready(cluster, api, capsys, status):
    """KubeRay 1.4.0's Ready is "serve endpoints > 0" (rayservice_controller.go calculateConditions) and stays True
    over a failed serve config, which keeps the proxies up (measured: lab/records/gpu-end-to-end.md, "Updating a running
    app")."""
    assert cluster.rayservice is not None
    (app,) = cluster.rayservice["status"]["activeServiceStatus"]["applicationStatuses"].values()
    app.update(status=status, message="The deployments ['Decode'] failed to start 3 times in a row.")
    assert run_verify(cluster, base_url=api.base_url) == 1
    out = capsys.readouterr().out
    assert f"[FAIL] rayservice: application ray-llm is {status}: The deployments ['Decode'] failed" in out


def test_a_pending_second_cluster_fails(cluster, api, capsys):
    assert cluster.rayservice is not None
    cluster.rayservice["status"]["pendingServiceStatus"] = {"rayClusterName": "ray-llm-fghij"}
    assert run_verify(cluster, base_url=api.base_url) == 1
    assert "[FAIL] rayservice: KubeRay is starting a second RayCluster ray-llm-fghij" in capsys.readouterr().out


# --- an endpoint that asks for API keys ---

KEY = "5b2d" * 16


def outputs_with_key(tmp_path: Path) -> Path:
    """The recorded outputs plus the secret `serveApiKey`, as `pulumi stack output --show-secrets` prints it."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({**load("outputs.json"), "serveApiKey": KEY}))
    return path


def run_verify_with_key(cluster: RecordedCluster, api, tmp_path: Path) -> int:
    outputs = outputs_with_key(tmp_path)
    return main(["--outputs-file", str(outputs), "--base-url", api.base_url], connect=lambda kubeconfig: cluster)


def test_the_stacks_key_is_sent_and_a_keyless_request_must_be_refused(cluster, api, tmp_path, capsys):
    api.api_keys = [KEY]
    assert run_verify_with_key(cluster, api, tmp_path) == 0
    out = capsys.readouterr().out
    assert "without a key: 401" in out
    assert KEY not in out
    (chat,) = api.requests
    assert chat["model"] == MODEL


def test_an_endpoint_that_answers_without_a_key_fails(cluster, api, tmp_path, capsys):
    assert run_verify_with_key(cluster, api, tmp_path) == 1  # the server asks for no key
    assert "a request without an API key got 200, not 401" in capsys.readouterr().out


def test_a_key_the_endpoint_does_not_take_fails(cluster, api, tmp_path, capsys):
    api.api_keys = ["6c3e" * 16]
    assert run_verify_with_key(cluster, api, tmp_path) == 1
    out = capsys.readouterr().out
    assert "the endpoint refused the stack's API key (401)" in out
    assert KEY not in out


def test_the_key_is_not_shown_with_the_outputs():
    assert KEY not in repr(StackOutputs.from_json({**load("outputs.json"), "serveApiKey": KEY}))


# --- the Ray head (issue 36) ---


def head_pod(cluster: RecordedCluster) -> dict[str, Any]:
    (pod,) = cluster.heads
    return pod


def restart(pod: dict[str, Any], exited_at: str, running_since: str | None) -> None:
    """The Ray container's state after one exit at `exited_at`: running again since `running_since`, or (None)
    waiting in CrashLoopBackOff, as the API reports a container the kubelet restarts."""
    status = pod["status"]["containerStatuses"][0]
    status["restartCount"] = 1
    status["lastState"] = {
        "terminated": {"exitCode": 137, "reason": "Error", "startedAt": "2026-11-29T18:08:12Z", "finishedAt": exited_at}
    }
    if running_since is None:
        status.update(ready=False, started=False, state={"waiting": {"reason": "CrashLoopBackOff"}})
    else:
        status["state"] = {"running": {"startedAt": running_since}}


def run_head_check(cluster: RecordedCluster, api, capsys) -> str:
    run_verify(cluster, base_url=api.base_url)
    return next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith(("[PASS] head", "[FAIL] head"))
    )


def without_store(cluster: RecordedCluster) -> None:
    assert cluster.rayservice is not None
    cluster.rayservice["spec"]["rayClusterConfig"].pop("gcsFaultToleranceOptions")


def test_the_restarted_head_fixtures_are_kubernetes_pods(cluster):
    restart(head_pod(cluster), "2026-12-01T09:00:00Z", None)
    restart(cluster.pods[0], "2026-12-01T09:01:02Z", "2026-12-01T09:01:12Z")
    assert core_object_errors({**load("head-pods.json"), "items": [head_pod(cluster), cluster.pods[0]]}) == []


def test_a_head_restarting_with_the_store_passes_while_the_workers_serve(cluster, api, capsys):
    restart(head_pod(cluster), "2026-12-01T09:00:00Z", None)
    assert run_verify(cluster, base_url=api.base_url) == 0
    assert "[PASS] head: the Ray head is restarting: with GCS fault tolerance the GPU workers keep serving" in (
        capsys.readouterr().out
    )


def test_a_head_restarting_without_the_store_fails(cluster, api, capsys):
    restart(head_pod(cluster), "2026-12-01T09:00:00Z", None)
    without_store(cluster)
    assert run_head_check(cluster, api, capsys).startswith(
        "[FAIL] head: the Ray head is restarting: without GCS fault tolerance every GPU worker restarts"
    )


def test_a_head_back_with_the_workers_untouched_passes(cluster, api, capsys):
    """The workers' containers started on 2026-11-29, before the head's exit: the store kept them."""
    restart(head_pod(cluster), "2026-12-01T09:00:00Z", "2026-12-01T09:00:03Z")
    assert run_head_check(cluster, api, capsys) == (
        "[PASS] head: Ray head ready, restarted 1 time(s); GCS fault tolerance: the stack's store"
    )


def test_workers_that_restarted_after_the_head_fail_the_store(cluster, api, capsys):
    restart(head_pod(cluster), "2026-12-01T09:00:00Z", "2026-12-01T09:00:03Z")
    restart(cluster.pods[0], "2026-12-01T09:01:02Z", "2026-12-01T09:01:12Z")
    assert run_head_check(cluster, api, capsys) == (
        "[FAIL] head: the Ray head restarted and the GPU workers restarted after it: the store did not keep them"
    )
