"""Each component on its own: two of each in one program, its own bad-args error."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from pulumi.errors import InputPropertiesError

from infra.cluster.eks import ClusterArgs
from infra.components import raise_input_errors
from infra.network.vpc import NetworkArgs, network_args_errors
from infra.settings.stack_config import ConfigError
from infra.stack import in_config_terms
from tools.offline import StackRun, run_stack

# A program that declares two of every component, in one VPC and one cluster where they must share one, each
# with args of its own: nothing of this project's config.
TWO_OF_EACH = """
import pulumi

from infra.observability.alerts import AlertArgs
from infra.cluster.eks import Cluster, ClusterArgs
from infra.nodes.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from infra.nodes.device_plugins import DevicePlugins, DevicePluginsArgs
from infra.serving.kuberay import KubeRayOperatorArgs
from infra.serving.gcs_store import GcsStore, GcsStoreArgs
from infra.serving.model_cache import ModelCache, ModelCacheArgs
from infra.network.vpc import Network, NetworkArgs
from infra.nodes.node_groups import GpuNodes, GpuNodesArgs, SystemNodes, SystemNodesArgs
from infra.observability.monitoring import Observability, ObservabilityArgs
from infra.settings.regions import Partition
from infra.serving.serve_app import Serving, ServingArgs


def rayservice(name):
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": name},
        "spec": {"serveConfigV2": "applications: []"},
    }


for team in ("blue", "green"):
    network = Network(
        f"{team}-network",
        NetworkArgs(cluster_name=team, vpc_cidr="10.8.0.0/16", azs=("us-east-1a", "us-east-1b"), region="us-east-1"),
    )
    private = list(network.private_subnet_ids.values())
    cluster = Cluster(
        f"{team}-cluster",
        ClusterArgs(
            cluster_name=team,
            kubernetes_version="1.35",
            partition=Partition(name="aws", dns_suffix="amazonaws.com"),
            vpc_cni_version="v1.21.1-eksbuild.1",
            kube_proxy_version="v1.35.0-eksbuild.2",
            vpc_id=network.vpc_id,
            private_subnet_ids=private,
            public_subnet_ids=list(network.public_subnet_ids.values()),
            api_public_access_cidrs=("100.24.10.0/24",),
        ),
    )
    for group in ("a", "b"):
        system = SystemNodes(
            f"{team}-system-{group}",
            SystemNodesArgs(
                instance_type="m7i.xlarge", count=1, coredns_version="v1.13.2-eksbuild.1", subnet_ids=private,
                vpc_id=network.vpc_id,
            ),
            cluster,
        )
        GcsStore(
            f"{team}-gcs-store-{group}",
            GcsStoreArgs(vpc_id=network.vpc_id, subnet_ids=private, client_security_group_id=system.security_group_id),
        )
        gpu = GpuNodes(
            f"{team}-gpu-{group}",
            GpuNodesArgs(node_group_name=f"gpu-{group}", instance_type="g6.8xlarge", count=2, vpc_id=network.vpc_id,
                         subnet_id=private[0], max_count=3),
            cluster,
        )
        plugins = DevicePlugins(
            f"{team}-plugins-{group}",
            DevicePluginsArgs(nvidia_version="0.20.0", efa_version="v0.5.30", region="us-east-1"),
            cluster,
            gpu,
        )
        ClusterAutoscaler(
            f"{team}-autoscaler-{group}",
            ClusterAutoscalerArgs(version="9.59.0", cluster_name=team, region="us-east-1"),
            cluster,
            depends_on=[system.node_group],
        )
        Serving(
            f"{team}-serving-{group}",
            ServingArgs(namespace=f"{team}-{group}", operator=KubeRayOperatorArgs(version="1.4.0"),
                        rayservice=rayservice(f"{team}-{group}"), hf_token="hf_NotARealTokenButLongEnough",
                        api_keys=["3f1c" * 16]),
            cluster,
            system,
            plugins,
        )
        ModelCache(
            f"{team}-model-cache-{group}",
            ModelCacheArgs(
                uri=f"s3://{team}-{group}-models/models/org/model",
                namespace=f"{team}-{group}",
                partition="aws",
                image="public.ecr.aws/example/mirror:1.0",
                repo="org/model",
                mirror_namespace=f"{team}-{group}-mirror",
                hf_token="hf_NotARealTokenButLongEnough",
            ),
            cluster,
        )
        Observability(
            f"{team}-observability-{group}",
            ObservabilityArgs(
                stack_version="88.5.3",
                dcgm_version="4.8.2",
                ray_namespace=f"{team}-{group}",
                kuberay_namespace="kuberay-system",
                alerts=AlertArgs("llm", f"{team}-{group}", ttft_p99_objective_seconds=2, deploy_deadline_seconds=2700),
            ),
            cluster,
            system.node_group,
            gpu.node_group,
        )
"""


@pytest.fixture(scope="module")
def two_of_each(tmp_path_factory: pytest.TempPathFactory) -> StackRun:
    program = tmp_path_factory.mktemp("two-of-each") / "__main__.py"
    program.write_text(TWO_OF_EACH)
    return run_stack({"aws:region": "us-east-1"}, program_file=program)


COMPONENTS = (
    "Network",
    "Cluster",
    "SystemNodes",
    "GpuNodes",
    "DevicePlugins",
    "ClusterAutoscaler",
    "Serving",
    "KubeRayOperator",
    "Observability",
    "ModelCache",
    "GcsStore",
)


def test_the_program_declares_several_of_every_component(two_of_each):
    declared = Counter(r.type.rsplit(":", 1)[1] for r in two_of_each.resources if r.type.startswith("ray-llm-eks:"))
    assert {component: declared[component] for component in COMPONENTS} == {
        "Network": 2,
        "Cluster": 2,
        **{component: 4 for component in COMPONENTS[2:]},
    }


def test_two_of_each_component_give_no_duplicate_urn(two_of_each):
    """A URN holds the parent's type and the resource's name, not the parent's name
    (https://www.pulumi.com/docs/iac/concepts/resources/names/#urns): children named alike under two components of
    one type were one URN, which the engine refuses ("Duplicate resource URN")."""
    repeated = [urn for urn, count in Counter(r.urn for r in two_of_each.resources).items() if count > 1]
    assert repeated == []


# --- each component refuses bad args on its own, every problem at once, in its args' terms ---

BAD_ARGS = {
    "Network": (
        "Network('n', NetworkArgs(cluster_name='n', vpc_cidr='10.0.0.0/255.255.0.0', azs=('us-east-1a',), "
        "region='us-east-1'))",
        {"vpc_cidr", "azs"},
    ),
    "Cluster": (
        "Cluster('c', ClusterArgs(cluster_name='c', kubernetes_version='1.35', partition=Partition('aws', "
        "'amazonaws.com'), vpc_cni_version='v1.21.1-eksbuild.1', kube_proxy_version='v1.35.0-eksbuild.2', "
        "vpc_id='vpc-1', private_subnet_ids=[], public_subnet_ids=[], api_public_access_cidrs=()))",
        {"private_subnet_ids", "api_public_access_cidrs"},
    ),
    "SystemNodes": (
        "SystemNodes('s', SystemNodesArgs(instance_type='m7i.xlarge', count=0, coredns_version='v1.13.2-eksbuild.1', "
        "subnet_ids=[], vpc_id='vpc-1'), None)",
        {"count", "subnet_ids"},
    ),
    "GpuNodes": (
        "GpuNodes('g', GpuNodesArgs(node_group_name='g', instance_type='g6.xlarge', count=451, vpc_id='vpc-1', "
        "subnet_id='subnet-1', capacity_type='capacity-block'), None)",
        {"instance_type", "count", "capacity_reservation_id"},
    ),
    "Serving": (
        "Serving('s', ServingArgs(namespace='ray', operator=KubeRayOperatorArgs(version='1.4.0'), "
        "rayservice={'kind': 'RayCluster', 'metadata': {'namespace': 'ray'}}, ready_timeout_seconds=0, "
        "worker_service_account=('model-reader', 'arn:aws:iam::123456789012:role/r')), None, None, None)",
        {"rayservice", "ready_timeout_seconds", "worker_service_account"},
    ),
    "GcsStore": (
        "GcsStore('g', GcsStoreArgs(vpc_id='vpc-1', subnet_ids=[], client_security_group_id='sg-1'))",
        {"subnet_ids"},
    ),
    "ModelCache": (
        "ModelCache('m', ModelCacheArgs(uri='s3://models-bucket/', namespace='ray', partition='aws', "
        "image='public.ecr.aws/example/mirror:1.0', repo='org/model', mirror_namespace='mirror'), None)",
        {"uri"},
    ),
}
IMPORTS = """
from infra.serving.kuberay import KubeRayOperatorArgs
from infra.serving.gcs_store import GcsStore, GcsStoreArgs
from infra.serving.model_cache import ModelCache, ModelCacheArgs
from infra.serving.serve_app import Serving, ServingArgs
from infra.cluster.eks import Cluster, ClusterArgs
from infra.network.vpc import Network, NetworkArgs
from infra.nodes.node_groups import GpuNodes, GpuNodesArgs, SystemNodes, SystemNodesArgs
from infra.settings.regions import Partition
"""


@pytest.mark.parametrize("component", BAD_ARGS)
def test_a_component_reports_every_bad_field_of_its_args(tmp_path, component):
    """pulumi's InputPropertiesError (pulumi/errors.py) with one property path per problem, raised before the
    component registers anything, as pulumi-eks's nodegroup.ts collects `validationErrors` and throws them together."""
    declaration, fields = BAD_ARGS[component]
    program = tmp_path / "__main__.py"
    program.write_text(IMPORTS + declaration + "\n")
    with pytest.raises(InputPropertiesError) as caught:
        run_stack({"aws:region": "us-east-1"}, program_file=program)
    assert {error["property_path"].split("[")[0] for error in caught.value.errors or []} == fields
    assert caught.value.declared_resources == []  # type: ignore[attr-defined]


def test_a_gpu_type_without_efa_is_refused_with_ec2s_reason(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text(IMPORTS + BAD_ARGS["GpuNodes"][0] + "\n")
    with pytest.raises(InputPropertiesError) as caught:
        run_stack({"aws:region": "us-east-1"}, program_file=program)
    reasons = {error["property_path"]: error["reason"] for error in caught.value.errors or []}
    assert reasons["instance_type"] == "'g6.xlarge' cannot be a GPU node: it has GPUs but no EFA network interface"


def test_the_cluster_has_no_open_api_by_default():
    """ClusterArgs has no default allow-list: without one EKS opens the public endpoint to 0.0.0.0/0
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html)."""
    (allow_list,) = [field for field in dataclasses.fields(ClusterArgs) if field.name == "api_public_access_cidrs"]
    assert allow_list.default is dataclasses.MISSING


def test_the_stack_reports_a_components_fields_as_its_config_keys():
    eight_azs = tuple(f"us-east-1{letter}" for letter in "abcdefgh")
    args = NetworkArgs(cluster_name="c", vpc_cidr="10.0.0.0/16", azs=eight_azs)
    with pytest.raises(ConfigError) as caught:
        in_config_terms("Network", lambda: raise_input_errors("Network", network_args_errors(args)))
    assert caught.value.problems == ["maxAzs is invalid: 8 Availability Zones: vpc_cidr=10.0.0.0/16 has room for 7"]
