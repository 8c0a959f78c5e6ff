"""The checks `tools.verify` runs on a deployed stack, in order, each from what a `VerifyContext` reads."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import openai
import yaml

from infra.serving.rollout_status import (
    FAILED_APP_STATUSES,
    NODE_TYPE_LABEL,
    RAY_CLUSTER_LABEL,
    READY,
    cluster_names,
    cluster_pods,
    cluster_verdict,
    has_gcs_fault_tolerance,
    head_restart_consequence,
    head_state,
    ray_container_status,
)
from infra.serving.serve_config import NIXL_EFA_BACKEND, PD_SIDES
from infra.settings.kv_offload import nixl_config
from tools.pd_metrics import PdFigures, PrometheusError, read_figures
from tools.probe import NIXL_BACKEND_LINE, CheckResult, EmptyCompletion, client, model_ids, stream_chat
from tools.verify_access import Cluster, StackOutputs

GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# EKS labels the nodes of a managed node group with its name.
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
# NIXL logs the transport it picked once per engine; the Ray worker processes log to files, not stdout.
RAY_LOG_DIR = "/tmp/ray/session_latest/logs/"
NIXL_BACKEND_GREP = ["grep", "-rhE", NIXL_BACKEND_LINE.pattern, RAY_LOG_DIR]
PROMPT = "Explain the benefits of prefill/decode disaggregation in two sentences."
MAX_TOKENS = 64
# The all-reduce runs inside the Ray workers (the GPUs and EFA devices are theirs), through torch's NCCL.
NCCL_PORT = 29517
NCCL_BYTES = 256 * 1024 * 1024
NCCL_BENCHMARK = """
import datetime, os, time, torch, torch.distributed as dist
rank, world, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["NCCL_BYTES"])
dist.init_process_group(
    "nccl", init_method=os.environ["INIT_METHOD"], rank=rank, world_size=world, timeout=datetime.timedelta(minutes=2)
)
torch.cuda.set_device(0)
data = torch.ones(size // 4, device="cuda")
for _ in range(5):
    dist.all_reduce(data)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(20):
    dist.all_reduce(data)
torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / 20
algbw = size / seconds / 1e9
print(f"all_reduce bytes={size} time_us={seconds * 1e6:.0f} busbw_GBps={algbw * 2 * (world - 1) / world:.2f}")
dist.destroy_process_group()
"""
NCCL_RESULT = re.compile(r"all_reduce bytes=(\d+) time_us=(\d+) busbw_GBps=([\d.]+)")
# aws-ofi-nccl names the libfabric provider it selected ("... Selected provider is efa, fabric is efa").
NCCL_OFI_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is (\w+)")


EndpointOpener = Callable[[], AbstractContextManager[str]]


@dataclass
class VerifyContext:
    """What every check reads; the RayService is fetched once and shared."""

    outputs: StackOutputs
    cluster: Cluster
    open_endpoint: EndpointOpener
    timeout_s: float
    open_prometheus: EndpointOpener | None = None
    metrics_wait_s: float = 0.0

    @cached_property
    def rayservice(self) -> dict[str, Any] | None:
        return self.cluster.get_rayservice(self.outputs.namespace, self.outputs.ray_service_name)

    @property
    def desired_workers(self) -> int:
        """One Ray worker per GPU node, as the RayService asks (at least one if it is missing)."""
        groups = (self.rayservice or {}).get("spec", {}).get("rayClusterConfig", {}).get("workerGroupSpecs", [])
        return sum(int(group.get("replicas", 0)) for group in groups) or 1

    @property
    def active_cluster(self) -> str:
        """The RayCluster the RayService serves from, as its status names it ("" for none)."""
        return cluster_names(self.rayservice or {})[0]

    def worker_pods(self) -> list[dict[str, Any]]:
        """The running worker pods of the RayService's active Ray cluster."""
        if not self.active_cluster:
            return []
        selector = f"{RAY_CLUSTER_LABEL}={self.active_cluster},{NODE_TYPE_LABEL}=worker"
        pods = self.cluster.list_pods(self.outputs.namespace, selector)
        return [pod for pod in pods if pod.get("status", {}).get("phase") == "Running"]


def _quantity(value: str | None) -> int:
    """Extended resources (GPUs, EFA interfaces) are whole numbers."""
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _is_ready(obj: dict[str, Any]) -> bool:
    conditions = obj.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def check_gpu_nodes(ctx: VerifyContext) -> CheckResult:
    group = ctx.outputs.gpu_node_group_name
    nodes = ctx.cluster.list_nodes(f"{NODEGROUP_LABEL}={group}")
    details, good = [], 0
    for node in sorted(nodes, key=lambda item: item["metadata"]["name"]):
        allocatable = node.get("status", {}).get("allocatable", {})
        gpus, efas = _quantity(allocatable.get(GPU_RESOURCE)), _quantity(allocatable.get(EFA_RESOURCE))
        ready = _is_ready(node)
        zone = node["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "?")
        problems = [
            problem
            for problem, present in (("not Ready", ready), (f"no {GPU_RESOURCE}", gpus), (f"no {EFA_RESOURCE}", efas))
            if not present
        ]
        good += not problems
        state = ", ".join(problems) if problems else "Ready"
        details.append(f"{node['metadata']['name']} ({zone}): {state}, {GPU_RESOURCE}={gpus}, {EFA_RESOURCE}={efas}")
    wanted = ctx.desired_workers
    if good >= wanted and good == len(nodes):
        return CheckResult(True, f"{good} GPU nodes ready with GPUs and EFA", tuple(details))
    summary = f"{good} of {len(nodes)} nodes of node group {group} are ready with GPUs and EFA; {wanted} needed"
    return CheckResult(False, summary, tuple(details))


def check_rayservice(ctx: VerifyContext) -> CheckResult:
    outputs = ctx.outputs
    rayservice = ctx.rayservice
    if rayservice is None:
        return CheckResult(False, f"RayService {outputs.namespace}/{outputs.ray_service_name} does not exist")
    status = rayservice.get("status", {})
    apps = status.get("activeServiceStatus", {}).get("applicationStatuses", {})
    details = [f"serviceStatus: {status.get('serviceStatus') or '-'}, Ready: {_is_ready(rayservice)}"]
    details += [f"application {app}: {app_status.get('status', '?')}" for app, app_status in apps.items()]
    running = status.get("serviceStatus") == "Running" or _is_ready(rayservice)
    # KubeRay (1.4.0 and 1.7.0) keeps Ready over a failed serve config (it counts serve endpoints): read the apps.
    failed = {app: app_status for app, app_status in apps.items() if app_status.get("status") in FAILED_APP_STATUSES}
    cluster = cluster_verdict(rayservice)
    service = ctx.cluster.get_service(outputs.namespace, outputs.serve_service)
    if service is not None:
        ports = ", ".join(str(port.get("port")) for port in service.get("spec", {}).get("ports", []))
        details.append(f"service {outputs.serve_service}: {service.get('spec', {}).get('clusterIP', '?')} port {ports}")
    if failed:
        app, app_status = next(iter(failed.items()))
        problem = f"application {app} is {app_status['status']}: {app_status.get('message') or ''}".rstrip(": ")
    elif not running:
        problem = "the RayService is not Running yet"
    elif cluster.state != READY:
        problem = cluster.message
    elif service is None:
        problem = f"service {outputs.serve_service} does not exist: Serve is not healthy"
    else:
        return CheckResult(True, f"RayService Running, {outputs.serve_service} exists", tuple(details))
    return CheckResult(False, problem, tuple(details))


def workers_started_since(pods: Mapping[str, Any], cluster: str, since: str) -> list[str]:
    """The cluster's worker pods whose Ray container (re)started at or after `since` (RFC 3339, as the API writes
    both: compared as text)."""
    started = {
        str(pod["metadata"]["name"]): str(
            ((ray_container_status(pod).get("state") or {}).get("running") or {}).get("startedAt", "")
        )
        for pod in cluster_pods(pods, cluster, "worker")
    }
    return sorted(name for name, at in started.items() if at >= since)


def check_head(ctx: VerifyContext) -> CheckResult:
    rayservice, cluster = ctx.rayservice, ctx.active_cluster
    if rayservice is None or not cluster:
        return CheckResult(False, "no active RayCluster to read the head of")
    pods = {"items": ctx.cluster.list_pods(ctx.outputs.namespace, f"{RAY_CLUSTER_LABEL}={cluster}")}
    head, fault_tolerant = head_state(pods, cluster), has_gcs_fault_tolerance(rayservice)
    store = "GCS fault tolerance: the stack's store" if fault_tolerant else "no GCS fault tolerance"
    details = [head.describe(cluster)]
    if not head.pod:
        return CheckResult(False, head.describe(cluster), tuple(details))
    restarted = workers_started_since(pods, cluster, head.last_exit_at) if head.last_exit_at else []
    if restarted:
        details.append(f"worker containers started since the head's last exit: {', '.join(restarted)}")
    consequence = head_restart_consequence(fault_tolerant)
    if not head.ready:
        return CheckResult(fault_tolerant, f"the Ray head is restarting: {consequence}", tuple(details))
    if restarted and fault_tolerant:
        return CheckResult(
            False,
            "the Ray head restarted and the GPU workers restarted after it: the store did not keep them",
            tuple(details),
        )
    summary = "Ray head ready" + (f", restarted {head.restarts} time(s)" if head.restarts else "")
    return CheckResult(True, f"{summary}; {store}", tuple(details))


def keyless_status(base_url: str, timeout_s: float) -> int:
    """The HTTP status of GET /v1/models sent without an Authorization header."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def check_completion(ctx: VerifyContext) -> CheckResult:
    model = ctx.outputs.model_id
    details: list[str] = []
    try:
        with ctx.open_endpoint() as base_url:
            if ctx.outputs.api_key:
                status = keyless_status(base_url, ctx.timeout_s)
                if status != 401:
                    return CheckResult(False, f"a request without an API key got {status}, not 401", tuple(details))
                details.append("without a key: 401")
            api = client(base_url, ctx.timeout_s, ctx.outputs.api_key)
            models = model_ids(api)
            details += [f"endpoint {base_url}", f"models: {', '.join(models) or '(none)'}"]
            if model not in models:
                return CheckResult(False, f"/v1/models does not list {model}", tuple(details))
            timing, reply = stream_chat(api, model, PROMPT, MAX_TOKENS)
    except EmptyCompletion as error:
        return CheckResult(False, str(error), tuple(details))
    except openai.AuthenticationError:
        return CheckResult(False, "the endpoint refused the stack's API key (401): is serveApiKey one of serveApiKeys?")
    except (OSError, openai.OpenAIError) as error:
        return CheckResult(False, f"the endpoint did not answer: {error}")
    details.append(f"reply: {reply.strip()[:80]!r}")
    summary = (
        f"{timing.completion_tokens} tokens, time to first token {timing.ttft_s:.3f} s, "
        f"{timing.tokens_per_s:.1f} tokens/s ({timing.decode_tokens_per_s:.1f} tokens/s after the first)"
    )
    return CheckResult(True, summary, tuple(details))


def _container(pod: dict[str, Any]) -> str:
    # KubeRay puts the Ray container first.
    return str(pod["spec"]["containers"][0]["name"])


def kv_buffer_devices(rayservice: dict[str, Any] | None) -> dict[str, str]:
    """Where each PD side registers its KV cache for NIXL, from the deployed serveConfigV2."""
    document = yaml.safe_load((rayservice or {}).get("spec", {}).get("serveConfigV2") or "{}") or {}
    args = (document.get("applications") or [{}])[0].get("args", {})
    devices = {}
    for side in PD_SIDES:
        kv = nixl_config(args.get(f"{side}_config", {}).get("engine_kwargs", {}).get("kv_transfer_config", {}))
        # vLLM's KVTransferConfig.kv_buffer_device defaults to "cuda".
        devices[side] = kv.get("kv_buffer_device", "cuda")
    return devices


def check_nixl_backend(ctx: VerifyContext) -> CheckResult:
    pods = ctx.worker_pods()
    if not pods:
        return CheckResult(False, "no running worker pod of the RayService's active Ray cluster")
    details, failures = [], 0
    for pod in pods:
        name = pod["metadata"]["name"]
        found = ctx.cluster.exec_in_pod(ctx.outputs.namespace, name, _container(pod), NIXL_BACKEND_GREP)
        backends = [match.group(1) for match in NIXL_BACKEND_LINE.finditer(found)]
        counts = ", ".join(f"{backend} x{backends.count(backend)}" for backend in sorted(set(backends)))
        on_efa = set(backends) == {NIXL_EFA_BACKEND}
        if not backends:
            details.append(f"{name}: no NIXL backend line in {RAY_LOG_DIR}")
        else:
            details.append(f"{name}: {counts}" + ("" if on_efa else ": NIXL fell back from EFA"))
        failures += not on_efa
    if len(pods) < ctx.desired_workers:
        return CheckResult(False, f"{len(pods)} worker pods run, {ctx.desired_workers} wanted", tuple(details))
    if failures:
        return CheckResult(False, f"{failures} of {len(pods)} workers do not use {NIXL_EFA_BACKEND}", tuple(details))
    devices = ", ".join(f"{side} {device}" for side, device in kv_buffer_devices(ctx.rayservice).items())
    summary = f"all {len(pods)} workers use {NIXL_EFA_BACKEND} (EFA); KV buffers in memory of: {devices}"
    return CheckResult(True, summary, tuple(details))


def nccl_command(rank: int, world: int, master_ip: str) -> list[str]:
    return [
        "env",
        f"RANK={rank}",
        f"WORLD_SIZE={world}",
        f"INIT_METHOD=tcp://{master_ip}:{NCCL_PORT}",
        f"NCCL_BYTES={NCCL_BYTES}",
        "NCCL_DEBUG=INFO",
        "python",
        "-c",
        NCCL_BENCHMARK,
    ]


def check_nccl(ctx: VerifyContext) -> CheckResult:
    pods = ctx.worker_pods()[:2]
    if len(pods) < 2:
        return CheckResult(False, "needs two running worker pods")
    master_ip = pods[0]["status"]["podIP"]
    # Both ranks block until the other joins: run them side by side.
    with ThreadPoolExecutor(max_workers=len(pods)) as pool:
        runs = [
            pool.submit(
                ctx.cluster.exec_in_pod,
                ctx.outputs.namespace,
                pod["metadata"]["name"],
                _container(pod),
                nccl_command(rank, len(pods), master_ip),
            )
            for rank, pod in enumerate(pods)
        ]
        outputs = [run.result() for run in runs]
    result = NCCL_RESULT.search(outputs[0])
    providers = sorted({match.group(1) for output in outputs for match in NCCL_OFI_PROVIDER.finditer(output)})
    details = [
        f"ranks: {', '.join(pod['metadata']['name'] for pod in pods)}",
        f"libfabric provider: {', '.join(providers) or 'none (NCCL used sockets)'}",
    ]
    if result is None:
        return CheckResult(False, "the all-reduce printed no result", tuple(details))
    size_mib = int(result.group(1)) // (1024 * 1024)
    summary = f"bus bandwidth {result.group(3)} GB/s ({size_mib} MiB all-reduce, {result.group(2)} us)"
    return CheckResult(providers == ["efa"], summary, tuple(details))


METRICS_POLL_S = 5.0


def check_pd_metrics(ctx: VerifyContext) -> CheckResult:
    """The PD figures from Prometheus, polled until healthy or `metrics_wait_s` has passed: Prometheus scrapes
    every 30 s (kube-prometheus-stack's default scrapeInterval), so check 4's request shows up after a while."""
    assert ctx.open_prometheus is not None
    # The Serve application is named after the RayService (infra/serving/serve_config.py serve_app_args).
    app = ctx.outputs.ray_service_name
    deadline = time.monotonic() + ctx.metrics_wait_s
    try:
        with ctx.open_prometheus() as base_url:
            while True:
                figures = read_figures(base_url, app, ctx.timeout_s)
                problems = figures.problems()
                if not problems or time.monotonic() >= deadline:
                    break
                time.sleep(METRICS_POLL_S)
    except (ConnectionError, PrometheusError) as error:
        return CheckResult(False, f"Prometheus did not answer: {error}")
    return CheckResult(not problems, "; ".join(problems) or _pd_summary(figures), tuple(figures.lines()))


def _pd_summary(figures: PdFigures) -> str:
    return (
        f"decode TTFT p50 {figures.get('decode', 'ttft_p50_s'):.3f} s, TPOT p50 "
        f"{figures.get('decode', 'tpot_p50_s'):.4f} s; {figures.get('decode', 'kv_transfers'):g} KV transfers "
        f"on decode, {figures.get('prefill', 'kv_transfers'):g} on prefill, none failed"
    )


@dataclass(frozen=True)
class Check:
    name: str
    title: str
    run: Callable[[VerifyContext], CheckResult]
    required: bool = True


REQUIRED_CHECKS = (
    Check("gpu_nodes", f"GPU nodes advertise {GPU_RESOURCE} and {EFA_RESOURCE}", check_gpu_nodes),
    Check("rayservice", "RayService is Running and its serve Service exists", check_rayservice),
    Check("head", "Ray head is ready, or restarting with the GPU workers serving on", check_head),
    Check("completion", "OpenAI API lists the model and streams a chat completion", check_completion),
    Check("nixl_backend", f"NIXL instantiated the {NIXL_EFA_BACKEND} backend on every worker", check_nixl_backend),
)
PD_METRICS_CHECK = Check(
    "pd_metrics", "Prometheus: each PD side's requests, TTFT, TPOT and KV transfers", check_pd_metrics
)
NCCL_CHECK = Check("nccl", "NCCL all-reduce between two GPU nodes (optional)", check_nccl, required=False)
