"""Scaling: the README's recipes rendered, the node arithmetic, whole-node workers and Ray placement.

Each recipe of the README's "Scaling" section is evaluated offline as written; the RayService must
validate against the KubeRay v1.4.0 CRD, each side of the serve config against Ray 2.58.0's own
classes, and the policy pack must pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import pytest
import yaml
from ray.llm._internal.common.placement import PlacementGroupConfig
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve.schema import ServeDeploySchema

from infra.config import ConfigError
from infra.topology import NodeShape, kube_reserved_cpu_millis, worker_cpu, worker_memory_gib
from policy.ray_llm_policies import PACK_NAME, POLICIES
from policy.ray_llm_policies.offline import OfflinePolicyEngine
from tests.schemas import rayservice_errors
from tests.test_policy import CapturedStack, preview
from tools.offline import StackRun, load_stack_config, run_stack
from tools.project import PROJECT, PROJECT_DIR

RAYSERVICE = "kubernetes:ray.io/v1:RayService"
NODE_GROUP = "eks:index:ManagedNodeGroup"
RECIPE = re.compile(r"```yaml\n# recipe(?P<rejected> \(rejected\))?: (?P<title>[^\n]+)\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Recipe:
    title: str
    config: dict
    rejected: bool


def readme_recipes() -> list[Recipe]:
    readme = (PROJECT_DIR / "README.md").read_text()
    section = readme.split("\n## Scaling\n", 1)[1].split("\n## ", 1)[0]
    recipes = []
    for match in RECIPE.finditer(section):
        entries = yaml.safe_load(match["body"])["config"]
        config = {key.removeprefix(f"{PROJECT}:"): value for key, value in entries.items()}
        recipes.append(Recipe(match["title"], config, bool(match["rejected"])))
    return recipes


RECIPES = {recipe.title.split(" ")[0].rstrip(","): recipe for recipe in readme_recipes()}


@dataclass(frozen=True)
class Expected:
    nodes: int
    instance_type: str
    gpus_per_pod: int
    efa_per_pod: int
    replicas: tuple[int, int]
    tensor_parallel_size: int


EXPECTED = {
    "1P1D": Expected(2, "g6.8xlarge", 1, 1, (1, 1), 1),
    "2P2D": Expected(4, "g6.8xlarge", 1, 1, (2, 2), 1),
    "1P3D": Expected(2, "g6.12xlarge", 4, 1, (1, 3), 2),
    "tensor": Expected(2, "p5.48xlarge", 8, 32, (1, 1), 8),
    "on-demand": Expected(4, "g6.12xlarge", 4, 1, (4, 4), 2),
    "capacity-block": Expected(2, "p5.48xlarge", 8, 32, (1, 1), 8),
}


@cache
def render(title: str) -> StackRun:
    return run_stack(RECIPES[title].config)


def rayservice(run: StackRun) -> dict:
    inputs = run.get(RAYSERVICE, "rayservice").inputs
    return {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


def serve_config(run: StackRun) -> dict:
    return yaml.safe_load(rayservice(run)["spec"]["serveConfigV2"])


def pd_args(run: StackRun) -> dict:
    (application,) = serve_config(run)["applications"]
    return application["args"]


def worker_group(run: StackRun) -> dict:
    (group,) = rayservice(run)["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    return group


def worker_limits(run: StackRun) -> dict:
    (container,) = worker_group(run)["template"]["spec"]["containers"]
    return container["resources"]["limits"]


def test_every_recipe_of_the_readme_is_checked():
    assert set(RECIPES) == {*EXPECTED, "pipeline"}
    assert [title for title, recipe in RECIPES.items() if recipe.rejected] == ["pipeline"]


@pytest.fixture(params=sorted(EXPECTED))
def recipe(request: pytest.FixtureRequest) -> tuple[str, StackRun]:
    return request.param, render(request.param)


def test_recipe_rayservice_validates_against_the_kuberay_crd(recipe):
    _, run = recipe
    assert rayservice_errors(rayservice(run)) == []


def test_recipe_serve_config_validates_with_rays_serve_schema(recipe):
    _, run = recipe
    ServeDeploySchema.model_validate(serve_config(run))


@pytest.mark.parametrize("side", ["prefill", "decode"])
def test_recipe_sides_validate_with_ray_serve_llms_classes(recipe, side):
    _, run = recipe
    llm_config = LLMConfig.model_validate(pd_args(run)[f"{side}_config"])
    PlacementGroupConfig.model_validate(llm_config.placement_group_config)


def test_recipe_passes_the_policy_pack(recipe):
    _, run = recipe
    assert preview(OfflinePolicyEngine(PACK_NAME, POLICIES), CapturedStack.of(run, "dev")) == []


def test_recipe_node_group_has_the_derived_node_count(recipe):
    title, run = recipe
    expected = EXPECTED[title]
    group = run.get(NODE_GROUP, "gpu").inputs
    assert group["instanceTypes"] == [expected.instance_type]
    assert group["scalingConfig"] == {
        "minSize": expected.nodes,
        "maxSize": expected.nodes,
        "desiredSize": expected.nodes,
    }


def test_recipe_has_one_worker_pod_per_gpu_node(recipe):
    title, run = recipe
    group = worker_group(run)
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == EXPECTED[title].nodes


def test_recipe_worker_owns_every_gpu_and_efa_interface_of_its_node(recipe):
    title, run = recipe
    limits = worker_limits(run)
    assert limits["nvidia.com/gpu"] == str(EXPECTED[title].gpus_per_pod)
    assert limits["vpc.amazonaws.com/efa"] == str(EXPECTED[title].efa_per_pod)


def test_recipe_efa_interfaces_requested_are_those_the_launch_template_attaches(recipe):
    _, run = recipe
    interfaces = run.get("aws:ec2/launchTemplate:LaunchTemplate", "gpu").inputs["networkInterfaces"]
    assert worker_limits(run)["vpc.amazonaws.com/efa"] == str(len(interfaces))


def test_recipe_replicas_and_parallelism_reach_both_sides(recipe):
    title, run = recipe
    args = pd_args(run)
    for side, replicas in zip(("prefill", "decode"), EXPECTED[title].replicas, strict=True):
        assert args[f"{side}_config"]["deployment_config"]["num_replicas"] == replicas
        assert args[f"{side}_config"]["engine_kwargs"]["tensor_parallel_size"] == EXPECTED[title].tensor_parallel_size
        assert args[f"{side}_config"]["engine_kwargs"]["pipeline_parallel_size"] == 1


def test_recipe_gpus_of_all_replicas_fit_the_nodes(recipe):
    title, run = recipe
    args = pd_args(run)
    needed = sum(
        args[f"{side}_config"]["deployment_config"]["num_replicas"]
        * args[f"{side}_config"]["engine_kwargs"]["tensor_parallel_size"]
        for side in ("prefill", "decode")
    )
    offered = EXPECTED[title].nodes * EXPECTED[title].gpus_per_pod
    assert needed <= offered < needed + EXPECTED[title].gpus_per_pod


def test_decode_override_reaches_decode_only():
    args = pd_args(render("1P3D"))
    assert args["decode_config"]["engine_kwargs"]["max_num_seqs"] == 512
    assert "max_num_seqs" not in args["prefill_config"]["engine_kwargs"]


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
        {"gpuNodeCount": 3},
        ["gpuNodeCount=3", "needs exactly 2", "(1 prefill + 1 decode replicas)"],
        id="3-nodes-for-1P1D",
    ),
    pytest.param(
        {
            "gpuNodeType": "g6.12xlarge",
            "prefillReplicas": 1,
            "decodeReplicas": 3,
            "tensorParallelSize": 2,
            "gpuNodeCount": 4,
        },
        ["gpuNodeCount=4", "needs exactly 2", "2 replica(s) per g6.12xlarge of 4 GPU(s)"],
        id="4-nodes-for-1P3D-tp2",
    ),
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
    pytest.param({"prefillReplicas": 0}, ["prefillReplicas='0'", "an integer >= 1"], id="no-prefill"),
    pytest.param({"decodeMaxNumSeqs": -1}, ["decodeMaxNumSeqs='-1'", "an integer >= 0"], id="negative-override"),
]


@pytest.mark.parametrize(("overrides", "named"), REJECTED)
def test_bad_layout_is_rejected_naming_keys_and_arithmetic(overrides, named):
    with pytest.raises(ConfigError) as rejected:
        run_stack(overrides)
    for text in named:
        assert text in str(rejected.value)
    assert rejected.value.declared_resources == []


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


def test_gpu_node_count_may_confirm_the_derived_value():
    assert load_stack_config({"gpuNodeCount": 2}).gpu_node_count == 2
    assert load_stack_config({"decodeReplicas": 3}).gpu_node_count == 4


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
        (NodeShape("g6.8xlarge", 1, 1, 32, 128), 30, 109),
        (NodeShape("g6.12xlarge", 4, 1, 48, 192), 46, 168),
        (NodeShape("p5.48xlarge", 8, 32, 192, 2048), 190, 1885),
    ],
)
def test_worker_requests_what_the_node_leaves_allocatable(shape, cpu, memory):
    """Allocatable = capacity - kube-reserved - eviction (nodeadm config.go: 255 MiB + 11 MiB x maxPods,
    evictionHard memory.available 100Mi; maxPods at most 737 for these types, nodeadm eni-max-pods.txt);
    memory capacity is the nominal size less Karpenter's default 7.5 % VM overhead
    (aws/karpenter-provider-aws, VM_MEMORY_OVERHEAD_PERCENT); 1 vCPU and 1 GiB stay for the DaemonSets."""
    assert (worker_cpu(shape), worker_memory_gib(shape)) == (cpu, memory)
    assert cpu * 1000 <= shape.vcpus * 1000 - kube_reserved_cpu_millis(shape.vcpus)
    assert memory * 1024 <= shape.memory_gib * 1024 - (255 + 11 * 737 + 100)


# --- reserved capacity ---


def launch_template(run: StackRun) -> dict:
    return run.get("aws:ec2/launchTemplate:LaunchTemplate", "gpu").inputs


def test_on_demand_capacity_reservation_is_targeted_by_the_launch_template():
    run = render("on-demand")
    assert launch_template(run)["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }
    assert "instanceMarketOptions" not in launch_template(run)
    assert run.get(NODE_GROUP, "gpu").inputs["capacityType"] == "ON_DEMAND"


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
    group = run.get(NODE_GROUP, "gpu").inputs
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert group["subnetIds"] == ["private-us-east-1a-id"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"gpuCapacityType": "capacity-block", "gpuAz": "sa-east-1a"},
        {"gpuCapacityType": "capacity-block", "capacityReservationId": "cr-0123456789abcdef0"},
    ],
)
def test_capacity_block_needs_its_reservation_and_az(overrides):
    """A Capacity Block is one reservation in one Availability Zone: the node group must target it
    and live in that AZ."""
    with pytest.raises(ConfigError, match="gpuCapacityType='capacity-block' needs capacityReservationId"):
        load_stack_config(overrides)
