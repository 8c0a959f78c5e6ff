"""Scaling: the recipes of docs/scaling.md rendered, the node arithmetic, whole-node workers and Ray placement.

Each recipe of docs/scaling.md is evaluated offline as written; the RayService must
validate against the KubeRay v1.4.0 CRD, each side of the serve config against Ray 2.58.0's own
classes, and the policy pack must pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

import pytest
import yaml
from ray.llm._internal.common.placement import PlacementGroupConfig
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve.schema import ServeDeploySchema

from infra.kube.node_allocatable import kube_reserved_cpu_millis
from infra.preflight.quota import gpu_vcpu_need
from infra.serving.code_package import SERVE_EXT
from infra.serving.serve_config import longest_stream_s
from infra.settings.instance_types import InstanceShape
from infra.settings.kinds import DEFAULT_KUBERAY_VERSION, VALIDATED_KUBERAY_VERSIONS
from infra.settings.rules_network import CLUSTER_AUTOSCALER_KUBERNETES_MINOR
from infra.settings.stack_config import ConfigError
from infra.settings.topology import worker_cpu, worker_memory_gib
from policy.ray_llm_policies.pack import PACK_NAME, POLICIES
from tests.chart_values import chart_defaults, unknown_value_keys
from tests.conftest import rejection
from tests.policy_engine import OfflinePolicyEngine
from tests.rayservice_parts import pd_args, ray_container, rayservice, serve_config, worker_group
from tests.schemas import rayservice_errors, schemas_dir
from tests.test_policy import CapturedStack, preview
from tools.offline import StackRun, load_stack_config, run_stack
from tools.project import PROJECT, PROJECT_DIR

NODE_GROUP = "eks:index:ManagedNodeGroup"
RECIPE = re.compile(r"```yaml\n# recipe(?P<rejected> \(rejected\))?: (?P<title>[^\n]+)\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Recipe:
    title: str
    config: dict
    rejected: bool


def documented_recipes() -> list[Recipe]:
    page = (PROJECT_DIR / "docs" / "scaling.md").read_text()
    recipes = []
    for match in RECIPE.finditer(page):
        entries = yaml.safe_load(match["body"])["config"]
        config = {key.removeprefix(f"{PROJECT}:"): value for key, value in entries.items()}
        recipes.append(Recipe(match["title"], config, bool(match["rejected"])))
    return recipes


RECIPES = {recipe.title.split(" ")[0].rstrip(","): recipe for recipe in documented_recipes()}


@dataclass(frozen=True)
class Expected:
    nodes: int
    instance_type: str
    gpus_per_pod: int
    efa_per_pod: int
    replicas: tuple[int, int]  # the fewest, with autoscaling
    tensor_parallel_size: int
    most_nodes: int | None = None  # with autoscaling

    @property
    def max_nodes(self) -> int:
        return self.most_nodes or self.nodes


EXPECTED = {
    "1P1D": Expected(2, "g6.8xlarge", 1, 1, (1, 1), 1),
    "2P2D": Expected(4, "g6.8xlarge", 1, 1, (2, 2), 1),
    "1P3D": Expected(2, "g6.12xlarge", 4, 1, (1, 3), 2),
    "tensor": Expected(2, "p5.48xlarge", 8, 32, (1, 1), 8),
    "on-demand": Expected(4, "g6.12xlarge", 4, 1, (4, 4), 2),
    "capacity-block": Expected(2, "p5.48xlarge", 8, 32, (1, 1), 8),
    "autoscaling": Expected(1, "g6.12xlarge", 4, 1, (1, 1), 2, most_nodes=4),
    "latency": Expected(2, "g6.8xlarge", 1, 1, (1, 1), 1, most_nodes=9),
}


@cache
def render(title: str) -> StackRun:
    return run_stack(RECIPES[title].config)


def fewest_replicas(llm_config: dict) -> int:
    deployment = llm_config["deployment_config"]
    return deployment.get("num_replicas") or deployment["autoscaling_config"]["min_replicas"]


def worker_limits(run: StackRun) -> dict:
    return ray_container(worker_group(run)["template"]["spec"])["resources"]["limits"]


def test_every_recipe_of_the_readme_is_checked():
    assert set(RECIPES) == {*EXPECTED, "pipeline"}
    assert [title for title, recipe in RECIPES.items() if recipe.rejected] == ["pipeline"]


@pytest.fixture(params=sorted(EXPECTED))
def recipe(request: pytest.FixtureRequest) -> tuple[str, StackRun]:
    return request.param, render(request.param)


@pytest.mark.parametrize("kuberay_version", VALIDATED_KUBERAY_VERSIONS)
def test_recipe_rayservice_validates_against_the_kuberay_crd(recipe, kuberay_version):
    """Against each validated release's CRD, the recipe deployed at that release: the RayService differs between them
    only by Ray's token (tests/test_serving.py,
    test_the_rayservice_differs_between_kuberay_versions_only_by_rays_token)."""
    title, run = recipe
    if kuberay_version != DEFAULT_KUBERAY_VERSION:
        run = run_stack({**RECIPES[title].config, "kuberayVersion": kuberay_version})
    assert rayservice_errors(rayservice(run), kuberay_version) == []


def test_recipe_serve_config_validates_with_rays_serve_schema(recipe):
    _, run = recipe
    ServeDeploySchema.model_validate(serve_config(run))


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_recipe_sides_validate_with_ray_serve_llms_classes(recipe, side, monkeypatch):
    """With the stack's code on the path, as the app's py_modules put it in the cluster (a latency objective's
    policy is imported by Serve's AutoscalingConfig)."""
    monkeypatch.syspath_prepend(str(SERVE_EXT))
    _, run = recipe
    llm_config = LLMConfig.model_validate(pd_args(run)[f"{side}_config"])
    PlacementGroupConfig.model_validate(llm_config.placement_group_config)


def test_recipe_passes_the_policy_pack(recipe):
    _, run = recipe
    assert preview(OfflinePolicyEngine(PACK_NAME, POLICIES), CapturedStack.of(run, "dev")) == []


def test_recipe_node_group_has_the_derived_node_count(recipe):
    title, run = recipe
    expected = EXPECTED[title]
    group = run.get(NODE_GROUP, "gpu-nodes-gpu").inputs
    # EKS takes the type from the node group or, for a Capacity Block, from the launch template only.
    assert group.get("instanceTypes", [launch_template(run).get("instanceType")]) == [expected.instance_type]
    assert group["scalingConfig"] == {
        "minSize": expected.nodes,
        "maxSize": expected.max_nodes,
        "desiredSize": expected.nodes,
    }


def test_recipe_has_one_worker_pod_per_gpu_node(recipe):
    title, run = recipe
    group = worker_group(run)
    assert group["replicas"] == group["minReplicas"] == EXPECTED[title].nodes
    assert group["maxReplicas"] == EXPECTED[title].max_nodes


def test_recipe_worker_owns_every_gpu_and_efa_interface_of_its_node(recipe):
    title, run = recipe
    limits = worker_limits(run)
    assert limits["nvidia.com/gpu"] == str(EXPECTED[title].gpus_per_pod)
    assert limits["vpc.amazonaws.com/efa"] == str(EXPECTED[title].efa_per_pod)


def test_recipe_efa_interfaces_requested_are_those_the_launch_template_attaches(recipe):
    _, run = recipe
    interfaces = run.get("aws:ec2/launchTemplate:LaunchTemplate", "gpu-nodes-gpu").inputs["networkInterfaces"]
    assert worker_limits(run)["vpc.amazonaws.com/efa"] == str(len(interfaces))


def test_recipe_replicas_and_parallelism_reach_both_sides(recipe):
    title, run = recipe
    args = pd_args(run)
    for side, replicas in zip(("prefill", "decode"), EXPECTED[title].replicas, strict=True):
        assert fewest_replicas(args[f"{side}_config"]) == replicas
        assert args[f"{side}_config"]["engine_kwargs"]["tensor_parallel_size"] == EXPECTED[title].tensor_parallel_size
        assert args[f"{side}_config"]["engine_kwargs"]["pipeline_parallel_size"] == 1


def test_recipe_gpus_of_all_replicas_fit_the_nodes(recipe):
    title, run = recipe
    args = pd_args(run)
    needed = sum(
        fewest_replicas(args[f"{side}_config"]) * args[f"{side}_config"]["engine_kwargs"]["tensor_parallel_size"]
        for side in ("prefill", "decode")
    )
    offered = EXPECTED[title].nodes * EXPECTED[title].gpus_per_pod
    assert needed <= offered < needed + EXPECTED[title].gpus_per_pod


def test_decode_override_reaches_decode_only():
    args = pd_args(render("1P3D"))
    assert args["decode_config"]["engine_kwargs"]["max_num_seqs"] == 512
    assert args["prefill_config"]["engine_kwargs"]["max_num_seqs"] == 32  # the stack's default


# --- Ray placement ---


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_each_replica_packs_whole_gpus_onto_one_node(dev, side):
    """Ray Serve LLM repeats `bundle_per_worker` tensor x pipeline times and passes `strategy` to the
    replica's placement group (ray/llm/_internal/serve/engines/vllm/vllm_models.py, VLLMEngineConfig.
    placement_bundles / placement_strategy); STRICT_PACK puts every bundle on one node
    (ray/util/placement_group.py). A bundle of GPU 1 is a whole GPU, so two replicas never share one."""
    placement = pd_args(dev)[f"{side}_config"]["placement_group_config"]
    assert placement == {"bundle_per_worker": {"CPU": 1, "GPU": 1}, "strategy": "STRICT_PACK"}


def test_rays_placement_schema_rejects_an_unknown_strategy(dev):
    """The check above has teeth: Ray's PlacementGroupConfig allows PACK, SPREAD, STRICT_PACK, STRICT_SPREAD
    (ray/llm/_internal/common/placement.py)."""
    placement = {**pd_args(dev)["prefill_config"]["placement_group_config"], "strategy": "NODE"}
    with pytest.raises(ValueError):
        PlacementGroupConfig.model_validate(placement)


# --- rejected layouts: named keys and arithmetic, nothing declared ---

REJECTED = [
    pytest.param(
        {"gpuNodeType": "g6.12xlarge", "tensorParallelSize": 8},
        ["tensorParallelSize=8", "= 8 GPUs per replica", "has 4 GPU(s)"],
        id="tp8-on-4-gpus",
    ),
    pytest.param(
        {"gpuNodeType": "g6.12xlarge", "tensorParallelSize": 3},
        ["tensorParallelSize=3", "does not divide the 4 GPUs", "1 GPU(s) per node would stay idle"],
        id="tp3-on-4-gpus",
    ),
    pytest.param({"tensorParallelSize": 2}, ["tensorParallelSize=2", "has 1 GPU(s)"], id="tp2-on-1-gpu"),
    pytest.param({"gpuCapacityType": "spot"}, ["gpuCapacityType='spot'", "on-demand, capacity-block"], id="spot"),
    # EKS quota "Nodes per managed node group": 450 (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html).
    pytest.param(
        {"prefillReplicas": 300, "decodeReplicas": 300},
        ["need up to 600 GPU nodes", "EKS allows 450 per node group"],
        id="more-nodes-than-a-node-group-holds",
    ),
    pytest.param({"prefillReplicas": 0}, ["prefillReplicas='0'", "an integer >= 1"], id="no-prefill"),
    pytest.param({"decodeMaxNumSeqs": -1}, ["decodeMaxNumSeqs='-1'", "an integer >= 0"], id="negative-override"),
]


@pytest.mark.parametrize(("overrides", "named"), REJECTED)
def test_bad_layout_is_rejected_naming_keys_and_arithmetic(overrides, named):
    message = str(rejection(overrides))
    for text in named:
        assert text in message


def test_pipeline_parallel_recipe_is_rejected_with_the_reason():
    """vLLM 0.26.0 (the version Ray 2.58.0's `llm` extra pins) cannot move a pipeline-parallel KV cache
    with the pull NixlConnector, the only NIXL backend Ray registers
    (ray/llm/_internal/serve/engines/vllm/kv_transfer/factory.py BUILTIN_BACKENDS): the decode side raises
    NotImplementedError for pipeline_parallel_size > 1 (vllm/distributed/kv_transfer/kv_connector/v1/nixl/
    base_worker.py, NixlBaseConnectorWorker.__init__), and the pull scheduler's kv_transfer_params carry
    tp_size but no pp_size (nixl/pull_scheduler.py request_finished), so decode would handshake with
    prefill's first stage only (nixl/base_worker.py _background_nixl_handshake)."""
    recipe = RECIPES["pipeline"]
    with pytest.raises(ConfigError) as rejected:
        run_stack(recipe.config)
    message = str(rejected.value)
    assert "pipelineParallelSize=2 is invalid" in message
    assert "NixlConnector" in message


def test_the_gpu_node_count_is_derived_from_the_layout():
    """1 prefill + 3 decode single-GPU replicas on 1-GPU g6.8xlarge nodes; 1 prefill + 3 decode TP2 replicas, two a
    4-GPU g6.12xlarge."""
    assert load_stack_config({"decodeReplicas": 3}).topology.gpu_nodes == 4
    layout = {"gpuNodeType": "g6.12xlarge", "decodeReplicas": 3, "tensorParallelSize": 2}
    assert load_stack_config(layout).topology.gpu_nodes == 2


def test_the_gpu_node_count_is_an_output_not_a_setting():
    assert run_stack({"decodeReplicas": 3}).outputs["gpuNodeCount"] == 4
    assert "gpuNodeCount" in str(rejection({"gpuNodeCount": 4}))


# --- what a worker pod may request ---


def test_kube_reserved_cpu_follows_eks_nodeadm():
    """awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go getCPUMillicoresToReserve: 6 % of the
    first core, 1 % of the second, 0.5 % of cores 3-4, 0.25 % of the rest (in millicores)."""
    assert kube_reserved_cpu_millis(1) == 60
    assert kube_reserved_cpu_millis(4) == 60 + 10 + 10
    assert kube_reserved_cpu_millis(32) == 60 + 10 + 10 + 70
    assert kube_reserved_cpu_millis(192) == 60 + 10 + 10 + 470


@pytest.mark.parametrize(
    ("shape", "cpu", "memory"),
    [
        (InstanceShape("g6.8xlarge", 1, "L4", 22888, True, 1, 32, 131072, 1, ("x86_64",)), 30, 109),
        (InstanceShape("g6.12xlarge", 4, "L4", 22888, True, 1, 48, 196608, 1, ("x86_64",)), 46, 168),
        (InstanceShape("p5.48xlarge", 8, "H100", 81920, True, 32, 192, 2097152, 32, ("x86_64",)), 190, 1885),
    ],
)
def test_worker_requests_what_the_node_leaves_allocatable(shape, cpu, memory):
    """Allocatable = capacity - kube-reserved - eviction (nodeadm config.go: 255 MiB + 11 MiB x maxPods,
    evictionHard memory.available 100Mi; maxPods at most 737 for these types, nodeadm eni-max-pods.txt);
    memory capacity is the nominal size less Karpenter's default 7.5 % VM overhead
    (aws/karpenter-provider-aws, VM_MEMORY_OVERHEAD_PERCENT); 1 vCPU and 1 GiB stay for the DaemonSets."""
    assert (worker_cpu(shape), worker_memory_gib(shape)) == (cpu, memory)
    assert cpu * 1000 <= shape.vcpus * 1000 - kube_reserved_cpu_millis(shape.vcpus)
    assert memory * 1024 <= shape.memory_mib - (255 + 11 * 737 + 100)


# --- reserved capacity ---


def launch_template(run: StackRun) -> dict:
    return run.get("aws:ec2/launchTemplate:LaunchTemplate", "gpu-nodes-gpu").inputs


def test_on_demand_capacity_reservation_is_targeted_by_the_launch_template():
    run = render("on-demand")
    assert launch_template(run)["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }
    assert "instanceMarketOptions" not in launch_template(run)
    assert run.get(NODE_GROUP, "gpu-nodes-gpu").inputs["capacityType"] == "ON_DEMAND"


def test_capacity_block_uses_its_market_type_reservation_and_node_group_capacity_type():
    """EKS managed node groups with Capacity Blocks for ML: a custom launch template with
    InstanceMarketOptions.MarketType "capacity-block" and the block's CapacityReservationId, and the
    node group's capacityType CAPACITY_BLOCK
    (https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)."""
    run = render("capacity-block")
    assert launch_template(run)["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert launch_template(run)["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-02168da1478b509e0"}
    }
    group = run.get(NODE_GROUP, "gpu-nodes-gpu").inputs
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert group["subnetIds"] == ["network-private-us-east-1a-id"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"gpuCapacityType": "capacity-block", "gpuAz": "sa-east-1a"},
        {"gpuCapacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0"},
    ],
)
def test_capacity_block_needs_its_reservation_and_az(overrides):
    """A Capacity Block is one reservation in one Availability Zone: the node group must target it
    and live in that AZ. EKS's managed node group with a Capacity Block targets the block's CapacityReservationId
    from its launch template (https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)."""
    with pytest.raises(ConfigError, match="gpuCapacityType='capacity-block' needs capacityReservationId"):
        load_stack_config(overrides)


# --- autoscaling ---

RELEASE = "kubernetes:helm.sh/v3:Release"


def test_each_side_autoscales_between_its_replicas_toward_its_target():
    """Ray Serve's AutoscalingConfig (ray/serve/config.py): min_replicas, max_replicas and
    target_ongoing_requests; LLMConfig validates deployment_config with Ray's DeploymentConfig."""
    args = pd_args(render("autoscaling"))
    grace = {"graceful_shutdown_timeout_s": longest_stream_s(args["decode_config"]["engine_kwargs"]["max_model_len"])}
    assert args["prefill_config"]["deployment_config"] == {
        "autoscaling_config": {"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 4},
        **grace,
    }
    assert args["decode_config"]["deployment_config"] == {
        "autoscaling_config": {"min_replicas": 1, "max_replicas": 6, "target_ongoing_requests": 32},
        **grace,
    }


def test_kuberay_autoscaler_runs_only_with_serve_autoscaling(dev):
    """KubeRay v1.4.0 RayCluster spec: enableInTreeAutoscaling starts the autoscaler sidecar in the head
    pod; autoscalerOptions.upscalingMode is one of Default, Aggressive, Conservative (ray.io_rayservices.yaml)."""
    cluster = rayservice(render("autoscaling"))["spec"]["rayClusterConfig"]
    assert cluster["enableInTreeAutoscaling"] is True
    assert cluster["autoscalerOptions"]["upscalingMode"] == "Default"
    assert cluster["autoscalerOptions"]["idleTimeoutSeconds"] == 300
    assert "enableInTreeAutoscaling" not in rayservice(dev)["spec"]["rayClusterConfig"]


def test_head_and_autoscaler_sidecar_fit_a_system_node():
    """m7i.xlarge: 4 vCPUs, 16 GiB (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html, as
    tools/instance_type_facts.py cites it); the head container and the autoscaler sidecar share its allocatable."""
    cluster = rayservice(render("autoscaling"))["spec"]["rayClusterConfig"]
    (head,) = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    sidecar = cluster["autoscalerOptions"]["resources"]["requests"]
    cpu = float(head["resources"]["requests"]["cpu"]) + float(sidecar["cpu"].removesuffix("m")) / 1000
    memory_mib = int(head["resources"]["requests"]["memory"].removesuffix("Gi")) * 1024 + int(
        sidecar["memory"].removesuffix("Mi")
    )
    assert cpu <= 4 - 1
    assert memory_mib <= (16 - 4) * 1024


def test_node_group_leaves_its_desired_size_to_the_cluster_autoscaler(dev):
    """pulumi-eks ManagedNodeGroup `ignoreScalingChanges`: ignore changes to the desired size, for the
    Cluster Autoscaler (pulumi_eks/managed_node_group.py)."""
    assert render("autoscaling").get(NODE_GROUP, "gpu-nodes-gpu").inputs["ignoreScalingChanges"] is True
    assert dev.get(NODE_GROUP, "gpu-nodes-gpu").inputs["ignoreScalingChanges"] is False


def test_cluster_autoscaler_is_installed_only_with_serve_autoscaling(dev):
    """The chart's repo, name, version and namespace as upstream publishes them
    (vendor/cluster-autoscaler-chart-9.59.0/SOURCE.txt: kubernetes/autoscaler cluster-autoscaler/charts)."""
    assert [r.name for r in dev.of_type(RELEASE) if r.name == "cluster-autoscaler"] == []
    release = render("autoscaling").get(RELEASE, "cluster-autoscaler-cluster-autoscaler").inputs
    assert release["chart"] == "cluster-autoscaler"
    assert release["repositoryOpts"]["repo"] == "https://kubernetes.github.io/autoscaler"
    assert release["version"] == "9.59.0"
    assert release["namespace"] == "kube-system"


def test_cluster_autoscaler_values_exist_in_the_real_chart():
    values = render("autoscaling").get(RELEASE, "cluster-autoscaler-cluster-autoscaler").inputs["values"]
    assert unknown_value_keys(values, chart_defaults("cluster-autoscaler")) == []


def test_cluster_autoscaler_discovers_this_clusters_node_groups_from_the_system_nodes():
    """Auto-discovery matches the k8s.io/cluster-autoscaler/enabled and k8s.io/cluster-autoscaler/<cluster>
    tags (the chart's autoDiscovery.tags default), which EKS puts on every managed node group's Auto Scaling
    group (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html)."""
    values = render("autoscaling").get(RELEASE, "cluster-autoscaler-cluster-autoscaler").inputs["values"]
    defaults = chart_defaults("cluster-autoscaler")
    assert defaults["autoDiscovery"]["tags"] == [
        "k8s.io/cluster-autoscaler/enabled",
        "k8s.io/cluster-autoscaler/{{ .Values.autoDiscovery.clusterName }}",
    ]
    assert values["autoDiscovery"] == {"clusterName": "ray-llm-multinode"}
    assert values["awsRegion"] == "sa-east-1"
    assert values["nodeSelector"] == {"role": "system"}


def test_cluster_autoscaler_acts_through_a_role_for_its_service_account():
    """IRSA: the role trusts the cluster's OIDC provider for system:serviceaccount:<ns>:<sa> with audience
    sts.amazonaws.com (https://docs.aws.amazon.com/eks/latest/userguide/associate-service-account-role.html);
    the chart puts rbac.serviceAccount.annotations on the service account it creates."""
    run = render("autoscaling")
    values = run.get(RELEASE, "cluster-autoscaler-cluster-autoscaler").inputs["values"]
    role = run.get("aws:iam/role:Role", "cluster-autoscaler-role").inputs
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"
    role_arn = values["rbac"]["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"]
    # The role's ARN as IAM gives it, `arn:aws:iam::<account>:role/<name>` (the offline role name:
    # tools/offline_aws.py).
    assert role_arn.startswith("arn:aws:iam::") and role_arn.endswith(":role/cluster-autoscaler-role-role")
    (statement,) = json.loads(role["assumeRolePolicy"])["Statement"]
    issuer = "oidc.eks.sa-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
    assert statement["Principal"] == {"Federated": f"arn:aws:iam::123456789012:oidc-provider/{issuer}"}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"]["StringEquals"] == {
        f"{issuer}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
        f"{issuer}:aud": "sts.amazonaws.com",
    }


def test_cluster_autoscaler_policy_is_the_upstream_recommended_one():
    """The "Full Cluster Autoscaler Features Policy (Recommended)" for ASG auto-discovery
    (kubernetes/autoscaler, cluster-autoscaler/cloudprovider/aws/README.md, chart 9.59.0's tag)."""
    policy = json.loads(
        render("autoscaling").get("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy").inputs["policy"]
    )
    actions = {action for statement in policy["Statement"] for action in statement["Action"]}
    assert actions == {
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations",
        "autoscaling:DescribeScalingActivities",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements",
        "eks:DescribeNodegroup",
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    }


def test_the_autoscaler_scales_and_terminates_only_in_this_clusters_groups():
    """Upstream's guide: restrict the scaling actions "using tag based conditionals" (kubernetes/autoscaler
    cluster-autoscaler/cloudprovider/aws/README.md, IAM Policy). The condition names the key the chart's
    auto-discovery matches (its values.yaml autoDiscovery.tags, vendored), for this cluster's name; describing stays
    account-wide, as discovery needs."""
    run = render("autoscaling")
    policy = json.loads(run.get("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy").inputs["policy"])
    describe, scale = policy["Statement"]
    cluster = run.get(RELEASE, "cluster-autoscaler-cluster-autoscaler").inputs["values"]["autoDiscovery"]["clusterName"]
    assert set(scale["Action"]) == {"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"}
    assert scale["Condition"] == {"Null": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster}": "false"}}
    assert "Condition" not in describe and not any(
        a.startswith(("autoscaling:Set", "autoscaling:Term")) for a in describe["Action"]
    )
    chart = yaml.safe_load((schemas_dir() / "cluster-autoscaler-chart-9.59.0/values.yaml").read_text())
    assert "k8s.io/cluster-autoscaler/{{ .Values.autoDiscovery.clusterName }}" in chart["autoDiscovery"]["tags"]


def test_quota_preflight_counts_the_most_nodes():
    cfg = load_stack_config(RECIPES["autoscaling"].config)
    assert gpu_vcpu_need(cfg).vcpus == 4 * 48


AUTOSCALING = {"serveAutoscaling": True, "prefillTargetOngoingRequests": 4, "decodeTargetOngoingRequests": 32}


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        pytest.param(
            {**AUTOSCALING, "decodeReplicas": 2, "decodeMaxReplicas": 1, "prefillMaxReplicas": 1},
            "decodeMaxReplicas=1 is invalid with serveAutoscaling=true: allowed is at least decodeReplicas=2",
            id="max-below-min",
        ),
        pytest.param(
            {**AUTOSCALING, "prefillMaxReplicas": 2, "decodeMaxReplicas": 2, "decodeTargetOngoingRequests": 0},
            "decodeTargetOngoingRequests=0 is invalid with serveAutoscaling=true",
            id="no-target",
        ),
        pytest.param(
            {"prefillMaxReplicas": 3},
            "prefillMaxReplicas=3, prefillTargetOngoingRequests=0 are invalid with serveAutoscaling=false",
            id="max-without-autoscaling",
        ),
    ],
)
def test_bad_autoscaling_is_rejected_naming_the_keys(overrides, named):
    assert named in str(rejection(overrides))


# --- engines that share a pod ---


def engine_env(run: StackRun, side: str) -> dict:
    return pd_args(run)[f"{side}_config"]["runtime_env"]["env_vars"]


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_engines_sharing_a_pod_keep_vllms_default_executor(side):
    """vLLM 0.26.0 runs Ray engines on RayExecutorV2 by default (vllm/envs.py VLLM_USE_RAY_V2_EXECUTOR_BACKEND defaults
    to 1). Its `_select_tcpstore_port` (vllm/v1/executor/ray_executor_v2.py) searches from VLLM_DP_MASTER_PORT + 100 +
    local DP rank x 32, and a non-DP engine's local rank is VLLM_DP_RANK_LOCAL, 0 by default (vllm/envs.py,
    vllm/config/parallel.py), so engines starting together in one pod probe the same port. The classic executor
    (vllm/v1/executor/ray_executor.py) takes a port from the OS, but on the GPU host its engines died on their first
    request, twice, with two replicas on one host, where RayExecutorV2 served and rolled with no failed request
    (lab/records/gpu-end-to-end.md, "Two replicas through an update"): the stack keeps the default where replicas share
    a pod too."""
    assert "VLLM_USE_RAY_V2_EXECUTOR_BACKEND" not in engine_env(render("1P3D"), side)


def test_cluster_autoscaler_must_be_built_for_the_kubernetes_version():
    """Upstream builds and tests each Cluster Autoscaler for one Kubernetes minor ("We recommend using Cluster
    Autoscaler with the Kubernetes control plane version for which it was meant ... there is always a chance that
    it won't work as expected", kubernetes/autoscaler cluster-autoscaler/README.md, Releases); chart 9.59.0 runs
    Cluster Autoscaler 1.35.0 (its appVersion). Nothing is declared for a mismatch."""
    with pytest.raises(ConfigError) as rejected:
        run_stack({**RECIPES["autoscaling"].config, "kubernetesVersion": "1.33"})
    message = str(rejected.value)
    assert "kubernetesVersion='1.33' is invalid with serveAutoscaling=true" in message
    assert "clusterAutoscalerVersion='9.59.0' runs Cluster Autoscaler 1.35" in message
    assert rejected.value.declared_resources == []


def test_without_serve_autoscaling_any_offered_kubernetes_version_goes():
    assert load_stack_config({"kubernetesVersion": "1.33"}).kubernetes_version == "1.33"


def test_the_known_chart_runs_the_cluster_autoscaler_of_the_listed_minor():
    for chart_version, minor in CLUSTER_AUTOSCALER_KUBERNETES_MINOR.items():
        chart = yaml.safe_load((schemas_dir() / f"cluster-autoscaler-chart-{chart_version}" / "Chart.yaml").read_text())
        assert chart["appVersion"].rsplit(".", 1)[0] == minor
