"""Inside the cluster (issue 35): what a pod that is not serving can reach, and what it can take from a node.

The NetworkPolicies the stack declares are read by `tests/network_policy_engine.py` (the Kubernetes API's semantics)
against the pods as they run: the Ray pods with the labels KubeRay adds to the RayService's pod templates, the KubeRay
operator and Prometheus with the labels their charts and operator give them, and a stranger pod, in another
namespace or in the serving namespace itself.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.constants import AUTOSCALER_METRIC_PORT
from ray.dashboard.consts import DASHBOARD_METRIC_PORT

from infra.kube.scheduling import VLLM_CACHE_GID, VLLM_CACHE_HOST_PATH
from infra.preview_notes import ray_auth_note
from infra.serving.network_policy import nixl_side_channel_ranges
from infra.serving.rayservice import (
    DASHBOARD_AGENT_GRPC_PORT,
    DASHBOARD_PORT,
    INSTANCE_LABEL,
    NODE_MANAGER_PORT,
    OBJECT_MANAGER_PORT,
    RAY_PORT_PARAMS,
    RUNTIME_ENV_AGENT_PORT,
    SERVE_PORT,
    WORKER_PORTS,
)
from infra.serving.serve_app import dropped_auth_options
from infra.serving.serve_config import NIXL_SIDE_CHANNEL_BASES
from infra.settings.rules_serving import has_ray_token_auth
from tests.conftest import SERVE_AUTOSCALING, exposed, rejection
from tests.network_policy_engine import NAMESPACE_NAME_LABEL, Pod, allows, port_entries
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, ray_container, rayservice, worker_group
from tests.schemas import kuberay_dir
from tests.test_node_start import user_data_parts
from tools.offline import StackRun, load_stack_config, run_stack
from tools.project import PROJECT_DIR
from tools.render import kubernetes_manifests

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
KUBE_PROMETHEUS_CRD = PROJECT_DIR / "vendor/kube-prometheus-stack-88.5.3/crd-prometheuses.yaml"
KUBERAY_DIR = PROJECT_DIR / "vendor/kuberay-v1.4.0"
# What answers on a Ray pod besides Serve (8000) and the dashboard (8265): GCS, the Ray client, the metrics export,
# the dashboard agent (ray/_private/ray_constants.py), the ports the stack pins (infra/serving/rayservice.py), the
# workers' gRPC range at both ends and NIXL's side channel at each side's base.
GCS_PORT, RAY_CLIENT_PORT, METRICS_PORT, DASHBOARD_AGENT_PORT = 6379, 10001, 8080, 52365
WORKER_RANGE_ENDS = WORKER_PORTS
NIXL_PORTS = tuple(NIXL_SIDE_CHANNEL_BASES.values())
NODE_PORTS = (NODE_MANAGER_PORT, OBJECT_MANAGER_PORT, *WORKER_RANGE_ENDS)
AGENT_PORTS = (DASHBOARD_AGENT_PORT, DASHBOARD_AGENT_GRPC_PORT, RUNTIME_ENV_AGENT_PORT)
CONTROL_PORTS = tuple(
    sorted((GCS_PORT, DASHBOARD_PORT, RAY_CLIENT_PORT, METRICS_PORT, *AGENT_PORTS, *NODE_PORTS, *NIXL_PORTS))
)
# The head's other metrics servers, as the installed Ray 2.58 numbers them, probed besides.
DASHBOARD_METRICS_PORT, AUTOSCALER_METRICS_PORT = DASHBOARD_METRIC_PORT, AUTOSCALER_METRIC_PORT
HEAD_METRICS_PORTS = (AUTOSCALER_METRICS_PORT, DASHBOARD_METRICS_PORT)
PROBED_PORTS = tuple(sorted((*CONTROL_PORTS, *HEAD_METRICS_PORTS)))


def policies(run: StackRun) -> list[dict]:
    return [{"metadata": r.inputs["metadata"], "spec": r.inputs["spec"]} for r in run.of_type(NETWORK_POLICY)]


def ray_pod(run: StackRun, node_type: str) -> Pod:
    """A Ray pod as KubeRay makes it: its group's template labels, and ray.io/node-type and ray.io/cluster
    (kuberay v1.4.0 ray-operator/controllers/ray/common/pod.go labelPod; utils/constant.go RayNodeTypeLabelKey)."""
    manifest = rayservice(run)
    cluster = manifest["spec"]["rayClusterConfig"]
    group = cluster["headGroupSpec"] if node_type == "head" else cluster["workerGroupSpecs"][0]
    labels = {**group["template"]["metadata"]["labels"], "ray.io/node-type": node_type, "ray.io/cluster": "llm-abcde"}
    return Pod(manifest["metadata"]["namespace"], labels)


def operator_pod(run: StackRun) -> Pod:
    """The kuberay-operator chart's pod: app.kubernetes.io/name from `kuberay-operator.name`, the values' nameOverride
    (helm-chart/kuberay-operator templates/deployment.yaml, values.yaml; vendored)."""
    template = (KUBERAY_DIR / "kuberay-operator-deployment.yaml").read_text()
    assert 'app.kubernetes.io/name: {{ include "kuberay-operator.name" . }}' in template
    name = yaml.safe_load((KUBERAY_DIR / "kuberay-operator-values.yaml").read_text())["nameOverride"]
    namespace = run.get(RELEASE, "serving-kuberay-kuberay-operator").inputs["namespace"]
    return Pod(namespace, {"app.kubernetes.io/name": name})


def prometheus_pod(run: StackRun) -> Pod:
    """A Prometheus pod: the operator reserves app.kubernetes.io/name "prometheus" on it (the Prometheus CRD's
    podMetadata, vendored from kube-prometheus-stack 88.5.3)."""
    described = re.search(r'"app\.kubernetes\.io/name" label, set to "(\w+)"', KUBE_PROMETHEUS_CRD.read_text())
    assert described is not None
    namespace = run.get(RELEASE, "observability-kube-prometheus-stack").inputs["namespace"]
    return Pod(namespace, {"app.kubernetes.io/name": described.group(1)})


def strangers(run: StackRun) -> list[Pod]:
    """Pods that are not serving: one in another namespace, one in the serving namespace without Ray's labels."""
    return [Pod("default", {"app": "anything"}), Pod(ray_pod(run, "head").namespace, {"app": "debug"})]


def test_a_pod_that_is_not_serving_reaches_no_ray_port_but_serves(dev):
    """The dashboard (8265: job submission, Serve's REST API), the Ray client (10001) and GCS (6379) run code for
    whoever reaches them; default deny leaves them to the paths below (issue 35 finding 1)."""
    for stranger in strangers(dev):
        for target in (ray_pod(dev, "head"), ray_pod(dev, "worker")):
            assert [port for port in CONTROL_PORTS if allows(policies(dev), stranger, target, port)] == []


def test_the_serve_port_answers_anyone(dev):
    """Serve's proxy takes the load balancer's traffic from the nodes (kube-proxy forwards a NodePort from the node's
    address) and in-cluster clients of serveEndpoint; the API keys guard it, not the network."""
    for source in strangers(dev):
        assert allows(policies(dev), source, ray_pod(dev, "worker"), SERVE_PORT)
        assert allows(policies(dev), source, ray_pod(dev, "head"), SERVE_PORT)


def reached(run: StackRun, source: Pod, target: Pod) -> list[int]:
    return [port for port in CONTROL_PORTS if allows(policies(run), source, target, port)]


def test_a_worker_reaches_the_heads_gcs_and_node_ports_but_not_its_dashboard(dev):
    """A worker runs the model's code: it reaches GCS, the head's raylet and object manager and its core workers' range
    (where the Serve controller answers), never the dashboard (8265: job submission), the Ray client, the dashboard
    agent or the metrics (issue 51)."""
    assert reached(dev, ray_pod(dev, "worker"), ray_pod(dev, "head")) == sorted((GCS_PORT, *NODE_PORTS))


def test_the_head_reaches_the_workers_node_ports_and_agents(dev):
    """GCS leases and health-checks each raylet, and the head's dashboard asks every node's dashboard and runtime env
    agents (Ray 2.58 dashboard/head.py, dashboard/state_aggregator.py)."""
    assert reached(dev, ray_pod(dev, "head"), ray_pod(dev, "worker")) == sorted((*NODE_PORTS, *AGENT_PORTS))


def test_workers_reach_each_others_node_ports_and_nixls_side_channel(dev):
    """Prefill and decode exchange the KV caches' metadata on NIXL's side channel; no worker reaches another's
    agents."""
    other_worker = Pod(ray_pod(dev, "worker").namespace, {**ray_pod(dev, "worker").labels, "ray.io/cluster": "other"})
    assert reached(dev, ray_pod(dev, "worker"), other_worker) == sorted((*NODE_PORTS, *NIXL_PORTS))


def test_the_policies_admit_the_whole_worker_range_and_nothing_beside_it(dev):
    head, worker = ray_pod(dev, "head"), ray_pod(dev, "worker")
    first, last = WORKER_PORTS
    assert all(allows(policies(dev), worker, head, port) for port in range(first, last + 1))
    assert not any(allows(policies(dev), worker, head, port) for port in (first - 1, last + 1))


def test_each_pinned_port_is_one_ray_start_picks_at_random_or_the_stack_names(dev):
    """Ray 2.58's `ray start` options (ray/scripts/scripts.py): the raylet, object manager, agent gRPC and runtime env
    agent ports default to random (unset or 0), so the policies could not name them unpinned; the worker range and the
    dashboard agent's port keep Ray's own defaults, written out so the policies and `ray start` share one number."""
    import click
    from ray.scripts.scripts import start

    context = click.Context(start)
    defaults = {option.name.replace("_", "-"): option.get_default(context) for option in start.params if option.name}
    assert set(RAY_PORT_PARAMS) <= set(defaults)
    pinned_from_random = {
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
    }
    # Unset (click's sentinel; Ray then passes None) or 0 both leave the port to the operating system.
    assert {name for name in RAY_PORT_PARAMS if not isinstance(defaults[name], int) or defaults[name] == 0} == (
        pinned_from_random
    )
    assert all(str(defaults[name]) == RAY_PORT_PARAMS[name] for name in set(RAY_PORT_PARAMS) - pinned_from_random)
    for group in (cluster_config(dev)["headGroupSpec"], *cluster_config(dev)["workerGroupSpecs"]):
        assert RAY_PORT_PARAMS.items() <= group["rayStartParams"].items()


def test_nixls_side_channel_bases_are_ray_serve_llms_own():
    """Ray 2.58 sets VLLM_NIXL_SIDE_CHANNEL_PORT to a base plus the replica's rank times its GPUs; prefill's base
    defaults to 20000 (engines/vllm/kv_transfer/nixl.py) and the PD builder moves decode's to 22000."""
    import ray

    serve = Path(ray.__file__).parent / "llm/_internal/serve"
    nixl = (serve / "engines/vllm/kv_transfer/nixl.py").read_text()
    builder = (serve / "serving_patterns/prefill_decode/builder.py").read_text()
    assert re.search(r'"NIXL_SIDE_CHANNEL_PORT_BASE", 20000\s*\)\s*\)\s*port = base_port \+', nixl)
    assert '"NIXL_SIDE_CHANNEL_PORT_BASE", 22000' in builder
    assert NIXL_SIDE_CHANNEL_BASES == {"prefill": 20000, "decode": 22000}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_nixls_ranges_hold_every_gpu_and_overlap_no_other_ray_port(stack):
    """A side's ports run from its base to its base plus its replicas times their GPUs (Ray's offset), which the
    worker group's GPUs bound; each range reaches the next side's base and no other Ray port."""
    cfg = load_stack_config({}, stack=stack)
    most_gpus = cfg.topology.most_gpu_nodes * cfg.topology.node.gpus
    (prefill_first, prefill_last), (decode_first, decode_last) = nixl_side_channel_ranges()
    assert (prefill_first, decode_first) == (NIXL_SIDE_CHANNEL_BASES["prefill"], NIXL_SIDE_CHANNEL_BASES["decode"])
    assert most_gpus <= min(prefill_last - prefill_first + 1, decode_last - decode_first + 1)
    assert WORKER_PORTS[1] < prefill_first and prefill_last < decode_first and decode_last < DASHBOARD_AGENT_PORT


def test_no_source_is_given_more_port_entries_than_the_agent_keeps(dev):
    """The VPC CNI's policy agent holds eight protocol/port entries per source address and destination pod
    (aws/aws-network-policy-agent pkg/ebpf/c/tc.v4ingress.bpf.c: the ingress map's value is lpm_trie_val[8])."""
    sources = [ray_pod(dev, "head"), ray_pod(dev, "worker"), operator_pod(dev), prometheus_pod(dev)]
    for target in (ray_pod(dev, "head"), ray_pod(dev, "worker")):
        for source in sources:
            assert len(port_entries(policies(dev), source, target)) <= 8, (source, target)


def test_prometheus_reaches_the_metrics_port_and_nothing_else(dev):
    """The Ray PodMonitors scrape port `metrics`, which KubeRay sets to 8080 (common/pod.go DefaultMetricsPort), on
    every Ray pod, and the head's dashboard metrics (44227) and, with Ray's autoscaler, its metrics (44217):
    tests/test_observability.py holds the PodMonitor to KubeRay's own."""
    allowed = [p for p in PROBED_PORTS if allows(policies(dev), prometheus_pod(dev), ray_pod(dev, "worker"), p)]
    assert allowed == [METRICS_PORT]
    allowed = [p for p in PROBED_PORTS if allows(policies(dev), prometheus_pod(dev), ray_pod(dev, "head"), p)]
    assert allowed == [METRICS_PORT, DASHBOARD_METRICS_PORT]


def test_with_rays_autoscaler_prometheus_also_reaches_the_heads_autoscaler_metrics():
    run = run_stack(SERVE_AUTOSCALING)
    allowed = [p for p in PROBED_PORTS if allows(policies(run), prometheus_pod(run), ray_pod(run, "head"), p)]
    assert allowed == [METRICS_PORT, AUTOSCALER_METRICS_PORT, DASHBOARD_METRICS_PORT]
    allowed = [p for p in PROBED_PORTS if allows(policies(run), prometheus_pod(run), ray_pod(run, "worker"), p)]
    assert allowed == [METRICS_PORT]


def test_the_head_metrics_ports_open_to_prometheus_only(dev):
    for stranger in strangers(dev):
        reached = [p for p in HEAD_METRICS_PORTS if allows(policies(dev), stranger, ray_pod(dev, "head"), p)]
        assert reached == []


def test_the_operator_reaches_the_heads_dashboard_and_nothing_else(dev):
    """KubeRay's RayService controller submits the serve config and reads its status on the head Service's dashboard
    port (kuberay v1.4.0 ray-operator/controllers/ray/utils/dashboard_httpclient.go; FetchHeadServiceURL with
    DashboardPortName)."""
    operator = operator_pod(dev)
    assert [p for p in CONTROL_PORTS if allows(policies(dev), operator, ray_pod(dev, "head"), p)] == [DASHBOARD_PORT]
    assert [p for p in CONTROL_PORTS if allows(policies(dev), operator, ray_pod(dev, "worker"), p)] == []


NCA = Path(sys.executable).parent / "nca"


def _pod_object(name: str, pod: Pod) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": pod.namespace, "labels": dict(pod.labels)},
        "spec": {"containers": [{"name": "main", "image": "stand-in"}]},
    }


def analyzer_connectivity(run: StackRun, pods: dict[str, Pod], workdir: Path) -> dict[tuple[str, str], str]:
    """NP-Guard's Network Config Analyzer (requirements-netpol.txt) on the stack's NetworkPolicies as tools.render
    writes them (what `kubectl apply` would take) and these pods: its pairwise connectivity (`--connectivity
    --output_format txt_no_fw_rules`), `ns/pod` to `ns/pod`."""
    policy_dir = workdir / "policies"
    policy_dir.mkdir()
    for manifest in kubernetes_manifests(run):
        if manifest["kind"] == "NetworkPolicy":
            (policy_dir / f"{manifest['metadata']['name']}.yaml").write_text(yaml.safe_dump(manifest))
    items = [_pod_object(name, pod) for name, pod in pods.items()]
    (workdir / "pods.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "PodList", "items": items}))
    namespaces = sorted({pod.namespace for pod in pods.values()})
    namespace_list = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {NAMESPACE_NAME_LABEL: n}}}
        for n in namespaces
    ]
    (workdir / "ns.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "NamespaceList", "items": namespace_list})
    )
    out = workdir / "connectivity.txt"
    command = [str(NCA), "--connectivity", str(policy_dir), "--pod_list", str(workdir / "pods.yaml")]
    command += ["--ns_list", str(workdir / "ns.yaml"), "--output_format", "txt_no_fw_rules", "--file_out", str(out)]
    finished = subprocess.run(command, capture_output=True, text=True, cwd=workdir, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    pairs = {}
    for line in out.read_text().splitlines():
        if " => " in line:
            source, rest = line.split(" => ", 1)
            target, connection = rest.split(" : ", 1)
            pairs[(source.removesuffix("[Pod]"), target.removesuffix("[Pod]"))] = connection
    return pairs


def test_np_guards_analyzer_finds_the_same_paths_into_the_ray_pods(dev, tmp_path):
    """A NetworkPolicy engine of its own (github.com/np-guard/network-config-analyzer 2.1.0, the API's semantics
    implemented independently of tests/network_policy_engine.py) on the rendered policies and the same pods: what
    reaches the Ray head and workers is exactly the paths above (8076-8079: the raylet, object manager, dashboard agent
    gRPC and runtime env agent; 52365 the dashboard agent; NIXL's side channel between workers alone)."""
    pods = {
        "head": ray_pod(dev, "head"),
        "worker": ray_pod(dev, "worker"),
        "worker-b": Pod(ray_pod(dev, "worker").namespace, {**ray_pod(dev, "worker").labels, "ray.io/cluster": "b"}),
        "operator": operator_pod(dev),
        "prometheus": prometheus_pod(dev),
        "stranger": strangers(dev)[0],
        "debug": strangers(dev)[1],
    }
    connectivity = analyzer_connectivity(dev, pods, tmp_path)
    ray = {f"{pods[n].namespace}/{n}": n for n in ("head", "worker")}
    into_ray = {(source, ray[target]): conn for (source, target), conn in connectivity.items() if target in ray}
    serve = "{protocols:TCP,dst_ports:8000}"
    namespace = pods["head"].namespace
    (_, decode_last) = nixl_side_channel_ranges()[-1]
    # The analyzer joins the worker range and both sides' side channels, each starting where the last ends.
    worker_to_worker = f"8000,8076-8077,10002-{decode_last}"
    assert into_ray == {
        ("0.0.0.0-255.255.255.255", "head"): serve,
        ("0.0.0.0-255.255.255.255", "worker"): serve,
        ("default/stranger", "head"): serve,
        ("default/stranger", "worker"): serve,
        (f"{namespace}/debug", "head"): serve,
        (f"{namespace}/debug", "worker"): serve,
        (f"{namespace}/worker", "head"): "{protocols:TCP,dst_ports:6379,8000,8076-8077,10002-19999}",
        (f"{namespace}/worker-b", "head"): "{protocols:TCP,dst_ports:6379,8000,8076-8077,10002-19999}",
        (f"{namespace}/head", "worker"): "{protocols:TCP,dst_ports:8000,8076-8079,10002-19999,52365}",
        (f"{namespace}/worker-b", "worker"): f"{{protocols:TCP,dst_ports:{worker_to_worker}}}",
        (f"{pods['operator'].namespace}/operator", "head"): "{protocols:TCP,dst_ports:8000,8265}",
        (f"{pods['operator'].namespace}/operator", "worker"): serve,
        # The head's dashboard metrics too (Ray's own port, DASHBOARD_METRIC_PORT); no autoscaler in dev.
        (
            f"{pods['prometheus'].namespace}/prometheus",
            "head",
        ): f"{{protocols:TCP,dst_ports:8000,8080,{DASHBOARD_METRICS_PORT}}}",
        (f"{pods['prometheus'].namespace}/prometheus", "worker"): "{protocols:TCP,dst_ports:8000,8080}",
    }


def test_every_ray_pod_template_carries_the_label_the_policies_select(dev):
    """A second cluster of a NewCluster upgrade is built from the same templates, so it is covered too."""
    manifest = rayservice(dev)
    cluster = manifest["spec"]["rayClusterConfig"]
    for group in (cluster["headGroupSpec"], *cluster["workerGroupSpecs"]):
        assert group["template"]["metadata"]["labels"][INSTANCE_LABEL] == manifest["metadata"]["name"]


def test_the_policies_are_in_place_before_the_rayservice(dev):
    """The VPC CNI sets a pod's policies as it starts it; a pod started before they exist is open until they do
    (https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html, "Policy enforcement at Pod startup")."""
    rayservice_deps = set(dev.get("kubernetes:ray.io/v1:RayService", "serving-rayservice").dependencies)
    serving = [
        r for r in dev.of_type(NETWORK_POLICY) if r.inputs["metadata"]["namespace"] == ray_pod(dev, "head").namespace
    ]
    assert {r.urn for r in serving} <= rayservice_deps
    assert len(serving) == 9


def test_pods_cannot_take_the_node_roles_credentials(shipped):
    """IMDSv2's hop limit 1 answers the node and hostNetwork pods only, not a pod's own network namespace
    (https://docs.aws.amazon.com/eks/latest/best-practices/identity-and-access-management.html, "Restrict access to
    the instance profile assigned to the worker node"; https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
    configuring-IMDS-existing-instances.html, HttpPutResponseHopLimit). Issue 35 finding 2."""
    for template in shipped.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        options = template.inputs["metadataOptions"]
        assert (options["httpTokens"], options["httpPutResponseHopLimit"]) == ("required", 1), template.name


def test_no_pod_of_the_stack_asks_imds_for_a_region(shipped):
    """With hop limit 1 a pod's IMDS call times out. The pods that call AWS take their region from their settings:
    the Cluster Autoscaler's awsRegion (cluster-autoscaler chart values.yaml), Prometheus's sigv4 region; boto3's S3
    client in the mirror and in Ray's reader (ray/llm/_internal/common/utils/cloud_filesystem/s3_filesystem.py:
    `boto3.client("s3", config=...)`) asks IMDS only in defaults_mode "auto" (botocore session.py
    _register_smart_defaults_factory), which nothing sets."""
    import botocore.session

    session = botocore.session.get_session()
    assert session.get_config_variable("defaults_mode") in (None, "legacy")
    for release in shipped.of_type(RELEASE):
        if release.inputs["chart"] == "cluster-autoscaler":
            assert release.inputs["values"]["awsRegion"] == shipped.outputs["region"]


def test_the_head_never_holds_the_hub_token(shipped):
    """Nothing on the head reads the Hub: the engine loads the model's config in its replica, on a worker
    (Ray 2.58 ray/llm/_internal/serve/engines/vllm/vllm_engine.py, LLMConfig.apply_checkpoint_info). Issue 35."""
    head = rayservice(shipped)["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    assert all(e["name"] != "HF_TOKEN" for c in head["containers"] for e in c.get("env", []))


def worker_env_names(run: StackRun) -> set[str]:
    container = ray_container(worker_group(run)["template"]["spec"])
    return {e["name"] for e in container["env"]}


def test_workers_that_read_the_stacks_s3_copy_hold_no_hub_token():
    """With the model cache the workers read S3 and the mirror Job alone reads the Hub, with its own Secret in its
    own namespace (infra/serving/model_cache.py); no hf-token Secret is made in the serving namespace."""
    run = run_stack({"modelCache": True, "hfToken": "hf_abc"}, secret_keys=("hfToken",))
    assert "HF_TOKEN" not in worker_env_names(run)
    secrets = [r.inputs["metadata"] for r in run.of_type("kubernetes:core/v1:Secret")]
    assert [(m["namespace"], m["name"]) for m in secrets if m["name"].endswith("hf-token")] == [
        ("model-cache", "model-mirror-hf-token")
    ]


def test_only_the_ray_workers_group_may_write_the_compile_cache(dev):
    """The workers carry the cache's group (Kubernetes PodSecurityContext.supplementalGroups), the node makes the
    directory with it (issue 35 finding 3: it was mode 1777, and it holds code vLLM loads and runs)."""
    assert worker_group(dev)["template"]["spec"]["securityContext"]["supplementalGroups"] == [VLLM_CACHE_GID]
    script = user_data_parts(dev)["text/x-shellscript"]
    assert any(VLLM_CACHE_HOST_PATH in line and f"-g {VLLM_CACHE_GID}" in line for line in script.splitlines())


@pytest.fixture
def scratch_root() -> Iterator[Path]:
    """A directory other users can pass through (pytest's own tmp_path is under a 0700 directory)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as root:
        os.chmod(root, 0o755)
        yield Path(root)


@pytest.mark.skipif(os.geteuid() != 0, reason="the node's user data runs as root; chown needs root here too")
def test_the_nodes_own_script_makes_a_cache_only_its_group_can_write(dev, scratch_root: Path):
    """The user data's own shell part, run here (as cloud-init runs it, as root) under a scratch root: the directory
    is not world-writable, keeps its group for what is made inside (setgid), and a process with the workers'
    supplemental group writes there while another user cannot (GNU coreutils install -d -o -g -m)."""
    script = user_data_parts(dev)["text/x-shellscript"].replace(
        VLLM_CACHE_HOST_PATH, f"{scratch_root}{VLLM_CACHE_HOST_PATH}"
    )
    subprocess.run(["bash", "-c", script], check=True)
    cache = scratch_root / VLLM_CACHE_HOST_PATH.lstrip("/")
    mode = cache.stat().st_mode
    assert (cache.stat().st_gid, mode & stat.S_IWOTH, bool(mode & stat.S_ISGID)) == (VLLM_CACHE_GID, 0, True)
    write = ["sh", "-c", f"touch {cache}/probe"]
    worker = subprocess.run(write, user=1000, group=1000, extra_groups=[VLLM_CACHE_GID], capture_output=True)
    stranger = subprocess.run(write, user=1001, group=1001, extra_groups=[], capture_output=True)
    assert (worker.returncode, stranger.returncode != 0) == (0, True), worker.stderr


def test_an_internal_endpoint_without_source_cidrs_is_refused():
    """cloud-provider-aws opens the nodes' security group on the NodePort to loadBalancerSourceRanges, or to 0.0.0.0/0
    without them, for an internal NLB as for an internet-facing one (kubernetes/cloud-provider-aws
    pkg/providers/v1/aws.go EnsureLoadBalancer: `sourceRangeCidrs = append(sourceRangeCidrs, "0.0.0.0/0")`,
    aws_loadbalancer.go updateInstanceSecurityGroupsForNLB), and the NodePort answers in plain HTTP. Finding 4."""
    message = str(rejection(exposed("internal", serveSourceCidrs=[])))
    assert "serveExposure='internal' needs serveSourceCidrs" in message
    assert "plain HTTP" in message


# --- Ray's own token (finding 1): KubeRay's authOptions where the operator has them ---


def cluster_config(run: StackRun) -> dict:
    return rayservice(run)["spec"]["rayClusterConfig"]


def test_kuberay_1_7_0_turns_rays_token_on_by_default():
    """rayAuthMode auto: KubeRay 1.7.0 has authOptions (mode token: a generated Secret per RayCluster, the token in
    every Ray container, its dashboard client sending it)."""
    assert cluster_config(run_stack({"kuberayVersion": "1.7.0"}))["authOptions"] == {"mode": "token"}


def test_kuberay_1_4_0_leaves_rays_token_off_and_says_so():
    """KubeRay 1.4.0's RayCluster has no authOptions (its vendored CRD), and its dashboard client sends no token, so a
    token there would lock the operator out of the serve config it submits: a stack that pins 1.4.0 runs without it."""
    cfg = load_stack_config({"kuberayVersion": "1.4.0"})
    assert cfg.ray_token_auth is False
    assert "authOptions" not in cluster_config(run_stack({"kuberayVersion": "1.4.0"}))
    assert "guarded by the serving namespace's NetworkPolicies alone" in ray_auth_note(cfg)


def test_asking_for_the_token_with_kuberay_1_4_0_is_refused():
    message = str(rejection({"kuberayVersion": "1.4.0", "rayAuthMode": "token"}))
    assert "rayAuthMode='token' is invalid with kuberayVersion='1.4.0'" in message
    assert "KubeRay takes authOptions from 1.5.1 on" in message


def test_the_token_can_be_turned_off_with_kuberay_1_7_0():
    assert "authOptions" not in cluster_config(run_stack({"kuberayVersion": "1.7.0", "rayAuthMode": "disabled"}))


@pytest.mark.parametrize(("version", "has_it"), [("1.4.0", False), ("1.7.0", True)])
def test_authoptions_is_in_the_raycluster_crd_of_the_releases_that_have_it(version, has_it):
    """The vendored RayCluster CRDs (ray-operator/config/crd/bases/ray.io_rayclusters.yaml at each tag): the stack's
    cut-off (KUBERAY_AUTH_OPTIONS_SINCE, 1.5.1, where raycluster_types.go gains AuthOptions) lies between them."""
    crd = yaml.safe_load((kuberay_dir(version) / "ray.io_rayclusters.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert ("authOptions" in spec) is has_it
    assert has_ray_token_auth(version) is has_it
    if has_it:
        assert spec["authOptions"]["properties"]["mode"]["enum"] == ["disabled", "token"]


def test_a_rayservice_stored_without_its_auth_options_fails_the_deploy(dev):
    """A cluster whose RayService CRD predates authOptions (KubeRay 1.4.0's, which helm upgrade keeps: the stack applies
    the CRDs of validated releases only, so an unvalidated one keeps them) prunes the field (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/
    custom-resource-definitions/#field-pruning): the live spec comes back without it and `pulumi up` says so."""
    applied = rayservice(run_stack({"kuberayVersion": "1.7.0"}))["spec"]
    pruned = {
        **applied,
        "rayClusterConfig": {k: v for k, v in applied["rayClusterConfig"].items() if k != "authOptions"},
    }
    assert "CRD is older than KubeRay 1.5.1" in (dropped_auth_options(applied, pruned) or "")
    assert dropped_auth_options(applied, applied) is None
    assert dropped_auth_options(rayservice(dev)["spec"], rayservice(dev)["spec"]) is None


def test_turning_rays_token_off_on_a_running_stack_moves_the_rayservice_alone():
    """rayAuthMode's effects (infra/settings/table.py: rayservice-replaced, or rayservice-new-cluster with newCluster):
    at KubeRay 1.7.0 token to disabled changes the RayService's rayClusterConfig (authOptions, which KubeRay hashes
    with the cluster spec: vendor/kuberay-v1.7.0/util.go GenerateHashWithoutReplicasAndWorkersToDelete) and so the
    rollout's wait, nothing else of the stack; with replace, Pulumi replaces the RayService on a rayClusterConfig
    change (its replace_on_changes)."""
    before = run_stack({"kuberayVersion": "1.7.0"})
    after = run_stack({"kuberayVersion": "1.7.0", "rayAuthMode": "disabled"})
    inputs = {(r.type, r.name): r.inputs for r in before.resources}
    moved = {(r.type, r.name) for r in after.resources if inputs.get((r.type, r.name)) != r.inputs}
    assert moved == {(RAYSERVICE, "serving-rayservice"), (ROLLOUT, "serving-rollout")}
    assert "spec.rayClusterConfig" in after.get(RAYSERVICE, "serving-rayservice").replace_on_changes
