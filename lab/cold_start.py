"""The deploy-time model: the first `pulumi up` to a serving endpoint, step by step on the program's own resource graph,
and what each later event waits for (a new GPU node, an engine restarted on its node, a model change, a newCluster
surge), before and after the model cache and the node caches; every step from a figure that says how it was obtained.

./.venv-test/bin/python -m lab.cold_start          # prints the tables
./.venv-test/bin/python -m lab.cold_start --write  # rewrites them in docs/model-cache.md and README.md
                                                     # (tests compare)

A figure is measured (the GPU runs recorded under docs/), cited (its source named) or an estimate (said so); a step
built from several says each. A transfer's seconds are its bytes over the slowest rate on its path. The first deploy
is a graph: each step starts once the steps it waits for have ended, those `pulumi up` orders (the resources' own
dependencies, which lab/tests/test_deploy_graph.py holds to the program's) and those the running system orders (a pod
waits for its node and its image). The steps name the program's resources they stand for.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from infra.nodes.node_groups import GPU_ROOT_THROUGHPUT_MIBPS, SYSTEM_ROOT_THROUGHPUT_MIBPS
from infra.serving.rayservice import KUBERAY_DELETION_DELAY_S
from infra.serving.rollout import POLL_SECONDS
from infra.serving.serve_config import longest_stream_s
from infra.settings.changes import SURGE_MINUTES_PER_GPU_NODE
from infra.settings.table import SETTINGS_BY_KEY
from serve_ext.model_mirror import PARALLEL_FILES
from tools.offline_models import MAX_SHARD_BYTES
from tools.project import PROJECT_DIR, replace_generated_block

GB = 1e9
MIB = 2**20
MEASURED, CITED, ESTIMATE = "measured", "cited", "estimate"


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    kind: str  # MEASURED, CITED or ESTIMATE
    source: str

    def cell(self) -> str:
        return f"{self.value:g} {self.unit}"


S3_LOAD_RUN = "docs/cold-start.md, second run (the lent H200 host, rclone's S3 server on loopback)"
PD_RUN = "lab/records/gpu-end-to-end.md, fourth session (PD app, full-size shape on an L4's share of an H200)"
# What the default stack (KubeRay 1.7.0) keeps an upgrade's old cluster after the switch, with newCluster.
DEFAULT_DELETION_DELAY_S = max(KUBERAY_DELETION_DELAY_S, longest_stream_s(SETTINGS_BY_KEY["maxModelLen"].default))
FIGURES = {
    "weights": Figure(
        18.82,
        "GB",
        MEASURED,
        "the default model's safetensors, 17.53 GiB (vLLM's 'Checkpoint size', lab/records/gpu-end-to-end.md; "
        "tools/offline_hub/Qwen3.5-9B.tensors.json)",
    ),
    "largest_file": Figure(
        MAX_SHARD_BYTES / GB,
        "GB",
        ESTIMATE,
        "the largest file of the checkpoint: transformers' 5 GB shards (tools/offline_models.py MAX_SHARD_BYTES); "
        "the Hub repo's own shards were not listed here",
    ),
    "image": Figure(
        20, "GB", ESTIMATE, "the Ray Serve LLM DLC image, compressed; not measured here (issue 23: 'tens of GB')"
    ),
    "network": Figure(
        25, "Gbps", CITED, "g6.8xlarge network bandwidth (https://aws.amazon.com/ec2/instance-types/g6/)"
    ),
    "instance_ebs": Figure(
        16, "Gbps", CITED, "g6.8xlarge EBS bandwidth (https://aws.amazon.com/ec2/instance-types/g6/)"
    ),
    "system_network": Figure(
        12.5, "Gbps", CITED, "m7i.xlarge network bandwidth, burst (https://aws.amazon.com/ec2/instance-types/m7i/)"
    ),
    "system_ebs": Figure(
        10, "Gbps", CITED, "m7i.xlarge EBS bandwidth, burst (https://aws.amazon.com/ec2/instance-types/m7i/)"
    ),
    "gp3_default": Figure(
        125,
        "MiB/s",
        CITED,
        "gp3 baseline throughput (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)",
    ),
    "gp3_set": Figure(
        GPU_ROOT_THROUGHPUT_MIBPS, "MiB/s", CITED, "the GPU root volume's throughput (infra/nodes/node_groups.py)"
    ),
    "gp3_system": Figure(
        SYSTEM_ROOT_THROUGHPUT_MIBPS, "MiB/s", CITED, "the system root volume's throughput (infra/nodes/node_groups.py)"
    ),
    "uncached_pull": Figure(
        9.5 / 334 * 1000,
        "MB/s",
        CITED,
        "a 9.5 GB image pulled uncached in 334 s (terraform-aws-eks-blueprints, ML container cache), the default "
        "containerd pull",
    ),
    "parallel_unpack": Figure(
        300,
        "MB/s",
        ESTIMATE,
        "SOCI parallel pull and unpack (FastImagePull) on a 32-vCPU GPU node, bounded by gzip decompression (unpigz) "
        "and the volume",
    ),
    "parallel_unpack_small": Figure(
        150,
        "MB/s",
        ESTIMATE,
        "the same on a 4-vCPU system node (m7i.xlarge): four cores decompress the 12 layers SOCI unpacks at once",
    ),
    "hub": Figure(
        100,
        "MB/s",
        ESTIMATE,
        "one huggingface_hub download flow through the NAT gateway (5 Gbps per flow outside a placement group, "
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html)",
    ),
    "ray_s3_download": Figure(
        0.62,
        "GB/s",
        MEASURED,
        f"Ray Serve LLM's S3 downloader (boto3, 10 ranged GETs per file, four shards at once): 18.83 GB in 30.2 s "
        f"({S3_LOAD_RUN}); in-region S3 is not measured, so the measured path's rate is the model's",
    ),
    "ray_start": Figure(
        14.3, "s", MEASURED, "`ray start` of a node (lab/records/gpu-end-to-end.md, first session, PD)"
    ),
    "deploy_to_running": Figure(
        297,
        "s",
        MEASURED,
        f"Serve's deploy of the PD app to RUNNING, weights local, cold compile caches: the longest of 250 to 297 s "
        f"({PD_RUN}): the replicas, vLLM's import, the load, the compile, KV cache and CUDA graphs",
    ),
    "engine_start_cold": Figure(
        188.95, "s", MEASURED, f"vLLM's whole engine start, cold compile caches (`engine_load_s`, {S3_LOAD_RUN})"
    ),
    "engine_start_cached": Figure(
        62.43,
        "s",
        MEASURED,
        f"the same on the caches a first start left on the node, VLLM_CACHE_ROOT and TRITON_CACHE_DIR (init 11.35 s "
        f"against 117.85 s, {S3_LOAD_RUN})",
    ),
    "node_launch": Figure(
        120,
        "s",
        ESTIMATE,
        "EC2 launch, AL2023 boot and the kubelet's registration of a node; not measured here (the Cluster Autoscaler "
        "gives a node up after max-node-provision-time, 15 min: vendor/cluster-autoscaler-chart-9.59.0/values.yaml)",
    ),
    "node_group_active": Figure(
        30, "s", ESTIMATE, "EKS marks a managed node group ACTIVE once its nodes joined; the provider polls for it"
    ),
    "control_plane": Figure(
        540,
        "s",
        CITED,
        "an EKS control plane 'in 9 minutes or less, on average' (https://aws.amazon.com/about-aws/whats-new/2021/03/"
        "amazon-eks-reduces-cluster-creation-time-40-percent/); a third party timed 793 to 971 s across 21 regions, "
        "860 s in sa-east-1 (https://easontechtalk.com/unofficial-eks-cluster-creation-performance-across-aws-regions)",
    ),
    "control_plane_third_party": Figure(
        860,
        "s",
        CITED,
        "the same timed by a third party in sa-east-1, dev's region (easontechtalk.com, above): not AWS's figure, "
        "the model's other reading",
    ),
    "cluster_addons": Figure(
        60,
        "s",
        ESTIMATE,
        "pulumi-eks after the control plane: access entries, then the vpc-cni add-on, kube-proxy and the OIDC "
        "provider, each aws.eks.Addon awaited ACTIVE (vendor/pulumi-eks-4.3.0/nodejs/eks/cluster/cluster.ts)",
    ),
    "network_objects": Figure(
        30, "s", ESTIMATE, "the VPC, then its subnets, internet gateway, public routes: API calls of seconds each"
    ),
    "nat_gateway": Figure(120, "s", ESTIMATE, "a NAT gateway from pending to available, then the private routes"),
    "api_objects": Figure(
        10, "s", ESTIMATE, "IAM roles and policies, a KMS key, launch templates, a bucket, Kubernetes objects"
    ),
    "coredns_addon": Figure(60, "s", ESTIMATE, "the CoreDNS add-on awaited ACTIVE: its two pods on a system node"),
    "elasticache_create": Figure(
        900,
        "s",
        ESTIMATE,
        "an ElastiCache replication group of a primary and a replica, Multi-AZ, TLS and AUTH, created until "
        "available; not measured here. terraform-provider-aws's acceptance tests took 795 s (AUTH and TLS) and "
        "1,086 s (Multi-AZ in a VPC) each for a create and a delete (hashicorp/terraform-provider-aws#17320)",
    ),
    "daemonset_release": Figure(
        60, "s", ESTIMATE, "a Helm release awaited ready: DaemonSets of small images on nodes that have joined"
    ),
    "kuberay_install": Figure(
        90, "s", CITED, "the KubeRay operator's Helm install, '1-2 minutes' (the AWS sample's README, step 3)"
    ),
    "pod_start": Figure(5, "s", ESTIMATE, "a pod's scheduling and container start, its image on the node"),
    "metrics_stack": Figure(
        180, "s", ESTIMATE, "kube-prometheus-stack's Helm install awaited ready: its CRDs and five workloads"
    ),
    "dcgm_exporter": Figure(120, "s", ESTIMATE, "the DCGM exporter's Helm install awaited ready on the GPU nodes"),
    "nlb": Figure(
        180,
        "s",
        ESTIMATE,
        "the serve Service's NLB created by the cloud controller until it has a hostname and is active",
    ),
    "nlb_health": Figure(30, "s", ESTIMATE, "the NLB's health checks pass on the nodes once the serve pods are ready"),
    "rollout_poll": Figure(
        POLL_SECONDS, "s", CITED, "the rollout's poll of Serve's status (infra/serving/rollout.py POLL_SECONDS)"
    ),
    "cluster_deletion_delay": Figure(
        DEFAULT_DELETION_DELAY_S,
        "s",
        CITED,
        "KubeRay 1.7.0, the default, deletes the old RayCluster rayClusterDeletionDelaySeconds after the switch, which "
        "the stack sets to the longest stream at the default maxModelLen (infra/serving/rayservice.py "
        "old_cluster_deletion_delay; vendor/kuberay-v1.7.0/rayservice_controller.go cleanUpRayClusterInstance); "
        "1.4.0's is a fixed 60 s (RayClusterDeletionDelayDuration)",
    ),
    "scale_down_unneeded": Figure(
        600,
        "s",
        CITED,
        "the Cluster Autoscaler removes a node once unneeded for scale-down-unneeded-time, 10 min by default "
        "(vendor/cluster-autoscaler-chart-9.59.0/values.yaml extraArgs; the stack sets none)",
    ),
}
# The AWS sample's own steps (its README, "Multi-Node Ray Serve on EKS", the sample this stack replaces), each the
# middle of its range, in minutes.
SAMPLE_STEPS = (
    ("deploy_cluster.sh: VPC, EKS, add-ons, the system node group", 17.5, CITED, "'15-20 minutes on a fresh run'"),
    ("deploy_node_group.sh: the GPU node group", 12.5, CITED, "'5-20 minutes, longer on a first run'"),
    ("install_kuberay.sh: the KubeRay operator", 1.5, CITED, "'1-2 minutes'"),
    ("deploy_ray_service.sh: the RayService to RUNNING", 10, ESTIMATE, "'several minutes', read as 10 (issue 39)"),
)
# What the first deploy is held to, against the sample's total.
TARGET_SHARE_OF_SAMPLE = 0.6


def _rate_mb_s(name: str) -> float:
    figure = FIGURES[name]
    return {
        "Gbps": figure.value * 1000 / 8,
        "GB/s": figure.value * 1000,
        "MiB/s": figure.value * MIB / 1e6,
        "MB/s": figure.value,
    }[figure.unit]


def seconds(gigabytes: float, *rates: str) -> float:
    """Bytes over the slowest of the rates on the path."""
    return gigabytes * GB / 1e6 / min(_rate_mb_s(rate) for rate in rates)


@dataclass(frozen=True)
class Part:
    """A step's share of time, from the figures named (the first is the bytes when there is a rate)."""

    what: str
    seconds: float
    figures: tuple[str, ...]

    def kinds(self) -> str:
        return " + ".join(sorted({FIGURES[name].kind for name in self.figures}))


def part(what: str, name: str) -> Part:
    """A part that is one figure in seconds."""
    return Part(what, FIGURES[name].value, (name,))


def transfer(what: str, size: str, *rates: str) -> Part:
    """Bytes over the slowest rate on the path: those two figures make the part (and say how it was obtained)."""
    slowest = min(rates, key=_rate_mb_s)
    return Part(
        f"{what} ({FIGURES[size].cell()} at {FIGURES[slowest].cell()})",
        seconds(FIGURES[size].value, slowest),
        (size, slowest),
    )


def mirror_copy() -> Part:
    """The mirror Job's copy: PARALLEL_FILES downloads at once, each one flow from the Hub, so the largest file's
    flow or the node's network ends it (serve_ext/model_mirror.py)."""
    weights, largest = FIGURES["weights"].value, FIGURES["largest_file"].value
    flows = min(PARALLEL_FILES * _rate_mb_s("hub"), _rate_mb_s("system_network"))
    copy = max(weights * GB / 1e6 / flows, largest * GB / 1e6 / _rate_mb_s("hub"))
    return Part(
        f"the Hub repo into the bucket, {PARALLEL_FILES} files at once", copy, ("weights", "largest_file", "hub")
    )


def gpu_pull(what: str = "the DLC image onto a GPU node, FastImagePull") -> Part:
    return transfer(what, "image", "parallel_unpack", "gp3_set", "instance_ebs", "network")


def system_pull() -> Part:
    return transfer(
        "the DLC image onto a system node, FastImagePull",
        "image",
        "parallel_unpack_small",
        "gp3_system",
        "system_ebs",
        "system_network",
    )


def s3_weights() -> Part:
    return transfer(
        "the weights from the bucket, Ray's S3 downloader", "weights", "ray_s3_download", "gp3_set", "network"
    )


def hub_weights() -> Part:
    return transfer("the weights from the Hub, one flow", "weights", "hub", "gp3_default")


# --- later events: what each waits for, before (the Hub, containerd's default pull, no node caches) and after ---


@dataclass(frozen=True)
class EventStep:
    name: str
    before: Part
    after: Part


def engines_on_caches() -> Part:
    """Serve's deploy to RUNNING less what the node's compile caches save one engine start (both measured)."""
    saved = FIGURES["engine_start_cold"].value - FIGURES["engine_start_cached"].value
    return Part(
        "the engines to RUNNING on the node's compile caches",
        FIGURES["deploy_to_running"].value - saved,
        ("deploy_to_running", "engine_start_cold", "engine_start_cached"),
    )


NOTHING = Part("nothing", 0, ())


def new_node_steps() -> list[EventStep]:
    """A GPU node that joins (a replacement, a scale-out), from its launch to its engines RUNNING."""
    running = part("the engines to RUNNING (replicas, vLLM, load, compile, KV cache, graphs)", "deploy_to_running")
    return [
        EventStep(
            "node launch and join",
            part("EC2, boot, the kubelet", "node_launch"),
            part("EC2, boot, the kubelet", "node_launch"),
        ),
        EventStep(
            "image pull",
            transfer("containerd's default pull, gp3 baseline", "image", "uncached_pull", "gp3_default"),
            gpu_pull("FastImagePull from the node's join (the pre-puller)"),
        ),
        EventStep("Ray worker start", part("`ray start`", "ray_start"), part("`ray start`", "ray_start")),
        EventStep("weights to the node", hub_weights(), s3_weights()),
        EventStep("engines to RUNNING", running, running),
    ]


def restarted_pod_steps() -> list[EventStep]:
    """An engine pod started again on a node that ran one (a worker pod restarted, or the RayService replaced in
    place): the image is on the node (the pre-puller keeps it in use) and so are the compile caches."""
    new = {step.name: step for step in new_node_steps()}
    cold = part("the engines to RUNNING, cold compile caches", "deploy_to_running")
    return [
        EventStep("image pull", NOTHING, NOTHING),
        new["Ray worker start"],
        new["weights to the node"],
        EventStep("engines to RUNNING", cold, engines_on_caches()),
    ]


def model_change_steps() -> list[EventStep]:
    """A new modelSource on a running stack: with the cache its mirror runs first (the DLC image is on the system
    node already), then Serve restarts the engines on the new weights, whose compile caches are cold."""
    new = {step.name: step for step in new_node_steps()}
    copy = mirror_copy()
    mirror = Part(
        "the mirror Job's pod, then its copy", FIGURES["pod_start"].value + copy.seconds, ("pod_start", *copy.figures)
    )
    return [
        EventStep("the mirror Job, Hub to S3", NOTHING, mirror),
        new["weights to the node"],
        new["engines to RUNNING"],
    ]


def surge_steps() -> list[EventStep]:
    """What one GPU node of a clusterUpgradeStrategy newCluster upgrade runs beside the active cluster's, from its
    launch until the Cluster Autoscaler removes the old cluster's node: the extra GPU node time of an upgrade, per node
    of the new cluster (the same before and after but for the pull and the weights)."""
    new = {step.name: step for step in new_node_steps()}
    same = {
        name: EventStep(name, part(name, figure), part(name, figure))
        for name, figure in (
            ("switch, then the old cluster's deletion", "cluster_deletion_delay"),
            ("the old node unneeded, then removed", "scale_down_unneeded"),
        )
    }
    return [
        new["node launch and join"],
        new["image pull"],
        new["Ray worker start"],
        new["weights to the node"],
        new["engines to RUNNING"],
        *same.values(),
    ]


def surge_minutes() -> int:
    """The surge per GPU node in whole minutes, rounded up: what infra/settings/changes.py says."""
    return math.ceil(sum(step.after.seconds for step in surge_steps()) / 60)


# --- the first `pulumi up`: a graph of steps on the program's resources ---


@dataclass(frozen=True)
class Wait:
    """A wait the running system makes, not `pulumi up`: a pod for its node, or for its image."""

    step: str
    why: str
    joined: bool = False  # only until the step's nodes have joined (its first part), not until it ends


@dataclass(frozen=True)
class DeployStep:
    name: str
    parts: tuple[Part, ...]
    # The steps whose resources this one's resources depend on, as the program declares them (the transitive
    # reduction: lab/tests/test_deploy_graph.py holds it to the program's graph).
    after: tuple[str, ...] = ()
    waits: tuple[Wait, ...] = ()
    # The program's resources the step stands for, as `type::name` globs; none for a step of the running system.
    resources: tuple[str, ...] = ()
    exposed_only: bool = False  # only with serveExposure internal or internet-facing
    autoscaled_only: bool = False  # only with serveAutoscaling or clusterUpgradeStrategy newCluster (the autoscaler)
    gcs_store_only: bool = False  # only with headFaultTolerance redis

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.parts)


def joining(what: str) -> tuple[Part, ...]:
    return (part(f"{what} launched, booted and joined", "node_launch"), part("the group ACTIVE", "node_group_active"))


def network_steps() -> list[DeployStep]:
    """The AWS resources the cluster and the nodes are made in and with."""
    return [
        DeployStep(
            "roles and key",
            (part("the node role, the KMS key", "api_objects"),),
            resources=(
                "aws:iam/role:Role::cluster-node-role",
                "aws:iam/rolePolicyAttachment:RolePolicyAttachment::cluster-node-role-*",
                "aws:kms/key:Key::*",
            ),
        ),
        DeployStep(
            "network",
            (part("the VPC, subnets, internet gateway and public routes", "network_objects"),),
            resources=(
                "aws:ec2/vpc:Vpc::*",
                "aws:ec2/subnet:Subnet::*",
                "aws:ec2/internetGateway:InternetGateway::*",
                "aws:ec2/routeTable:RouteTable::network-public-routes",
                "aws:ec2/routeTableAssociation:RouteTableAssociation::network-public-*",
                "aws:ec2/eip:Eip::*",
            ),
        ),
        DeployStep(
            "system nodes' security group",
            (part("the group that names the system nodes", "api_objects"),),
            ("network",),
            resources=("aws:ec2/securityGroup:SecurityGroup::system-nodes-system-nodes",),
        ),
        DeployStep(
            "NAT gateway and private routes",
            (part("the NAT gateway, its routes and the S3 endpoint", "nat_gateway"),),
            ("network",),
            resources=(
                "aws:ec2/natGateway:NatGateway::*",
                "aws:ec2/routeTable:RouteTable::network-private-routes-*",
                "aws:ec2/routeTableAssociation:RouteTableAssociation::network-private-*",
                "aws:ec2/vpcEndpoint:VpcEndpoint::*",
            ),
        ),
    ]


def cluster_steps(control_plane: str) -> list[DeployStep]:
    """The EKS cluster (`control_plane`: the figure of EKS's own minutes), the node groups and CoreDNS."""
    return [
        DeployStep(
            "EKS cluster",
            (part("the control plane", control_plane), part("pulumi-eks's add-ons and access", "cluster_addons")),
            ("network", "roles and key"),
            resources=("eks:index:Cluster::*", "pulumi:providers:kubernetes::*"),
        ),
        DeployStep(
            "system launch template",
            (part("the template with the cluster's group and the system nodes' own", "api_objects"),),
            ("EKS cluster", "system nodes' security group"),
            resources=("aws:ec2/launchTemplate:LaunchTemplate::system-nodes-system",),
        ),
        DeployStep(
            "GPU launch template",
            (part("the EFA group, the placement group, the template with the cluster's group", "api_objects"),),
            ("EKS cluster",),
            resources=(
                "aws:ec2/launchTemplate:LaunchTemplate::gpu-nodes-gpu",
                "aws:ec2/securityGroup:SecurityGroup::gpu-nodes-efa",
                "aws:ec2/placementGroup:PlacementGroup::*",
            ),
        ),
        DeployStep(
            "system node group",
            joining("the system nodes"),
            ("system launch template", "NAT gateway and private routes"),
            resources=("eks:index:ManagedNodeGroup::system-nodes-system",),
        ),
        DeployStep(
            "GPU node group",
            joining("the GPU nodes"),
            ("GPU launch template", "NAT gateway and private routes"),
            resources=("eks:index:ManagedNodeGroup::gpu-nodes-gpu",),
        ),
        DeployStep(
            "CoreDNS",
            (part("the add-on on the system nodes", "coredns_addon"),),
            ("system node group",),
            resources=("aws:eks/addon:Addon::system-nodes-coredns",),
        ),
    ]


SYSTEM_JOINED = Wait("system node group", "a system node to run on", joined=True)


def serving_steps() -> list[DeployStep]:
    """The Kubernetes side before the RayService: the namespace and the pre-puller, the pulls, the plugins, the
    operator."""
    return [
        DeployStep(
            "serving namespace and the image pre-puller",
            (part("the namespace, its policies, secrets and the pre-puller's DaemonSet", "api_objects"),),
            ("EKS cluster",),
            resources=(
                "kubernetes:core/v1:Namespace::serving-namespace",
                "kubernetes:networking.k8s.io/v1:NetworkPolicy::serving-*",
                "kubernetes:core/v1:Secret::serving-hf-token",
                "kubernetes:core/v1:Secret::serving-serve-api-keys",
                "kubernetes:core/v1:ConfigMap::serving-*",
                "kubernetes:apps/v1:DaemonSet::serving-image-prepull",
            ),
        ),
        DeployStep(
            "DLC image on the system node",
            (system_pull(),),
            waits=(SYSTEM_JOINED, Wait("serving namespace and the image pre-puller", "the pre-puller's pod")),
        ),
        DeployStep(
            "DLC image on the GPU nodes",
            (gpu_pull(),),
            waits=(
                Wait("GPU node group", "the GPU nodes", joined=True),
                Wait("serving namespace and the image pre-puller", "the pre-puller's pod"),
            ),
        ),
        DeployStep(
            "device plugins",
            (part("the NVIDIA and EFA plugins' releases", "daemonset_release"),),
            ("GPU node group",),
            resources=("kubernetes:helm.sh/v3:Release::device-plugins-*",),
        ),
        DeployStep(
            "KubeRay operator",
            (part("its CRDs (two server-side applies), its Helm release, its namespace's labels", "kuberay_install"),),
            ("CoreDNS",),
            resources=(
                "pulumi-python:dynamic/ray-llm-eks:KubeRayCrds::serving-kuberay-crds",
                "kubernetes:helm.sh/v3:Release::serving-kuberay-kuberay-operator",
                "kubernetes:core/v1:NamespacePatch::serving-kuberay-*",
            ),
        ),
    ]


def gcs_store_steps() -> list[DeployStep]:
    """The Ray head's GCS store (headFaultTolerance redis) and how the serving namespace names it."""
    return [
        DeployStep(
            "GCS store",
            (part("the ElastiCache for Valkey group, its subnets, group and token", "elasticache_create"),),
            ("system nodes' security group",),
            resources=(
                "aws:ec2/securityGroup:SecurityGroup::gcs-store-clients",
                "aws:elasticache/*::gcs-store-*",
                "random:index/randomPassword:RandomPassword::gcs-store-*",
            ),
            gcs_store_only=True,
        ),
        DeployStep(
            "GCS store's address and password",
            (part("its ExternalName Service and its token's Secret", "api_objects"),),
            ("GCS store", "serving namespace and the image pre-puller"),
            resources=(
                "kubernetes:core/v1:Secret::serving-gcs-redis-password",
                "kubernetes:core/v1:Service::serving-gcs-redis-address",
            ),
            gcs_store_only=True,
        ),
    ]


def model_and_app_steps() -> list[DeployStep]:
    """The model cache and its mirror, the RayService and the wait for its app."""
    return [
        DeployStep(
            "model cache",
            (
                part(
                    "the bucket, the IAM roles, the mirror's namespace and account, the workers' account", "api_objects"
                ),
            ),
            ("CoreDNS", "serving namespace and the image pre-puller"),
            resources=(
                "aws:s3/*::model-cache-bucket",
                "aws:iam/*::model-cache-*",
                "kubernetes:core/v1:*::model-cache-*",
                "kubernetes:core/v1:ServiceAccount::serving-worker-service-account",
            ),
        ),
        DeployStep(
            "mirror Job",
            (part("its pod, the image on the node", "pod_start"), mirror_copy()),
            ("model cache",),
            waits=(SYSTEM_JOINED, Wait("DLC image on the system node", "its container's image")),
            resources=("kubernetes:batch/v1:Job::model-cache-mirror",),
        ),
        DeployStep(
            "RayService",
            (Part("the object, applied", 0, ()),),
            ("KubeRay operator", "device plugins", "mirror Job", "GCS store's address and password"),
            resources=(
                "kubernetes:ray.io/v1:RayService::serving-rayservice",
                "pulumi-python:dynamic/ray-llm-eks:RayServiceDrain::*",
            ),
        ),
        DeployStep(
            "serve rollout",
            (
                part("the head pod", "pod_start"),
                part("`ray start` on the head", "ray_start"),
                part("`ray start` on the workers, which join it", "ray_start"),
                s3_weights(),
                part("the engines to RUNNING", "deploy_to_running"),
                part("the rollout's next poll", "rollout_poll"),
            ),
            ("RayService",),
            waits=(
                Wait("DLC image on the system node", "the head's image"),
                Wait("DLC image on the GPU nodes", "the workers' image"),
            ),
            resources=("pulumi-python:dynamic/ray-llm-eks:ServeRollout::*",),
        ),
    ]


def other_steps() -> list[DeployStep]:
    """Beside the serving path: the serve load balancer, the metrics stack, the Cluster Autoscaler."""
    return [
        DeployStep(
            "serve load balancer",
            (part("the Service's NLB, to its hostname", "nlb"),),
            ("serving namespace and the image pre-puller",),
            resources=("kubernetes:core/v1:Service::serving-serve-load-balancer",),
            exposed_only=True,
        ),
        DeployStep(
            "NLB serves",
            (part("its health checks pass", "nlb_health"),),
            waits=(Wait("serve load balancer", "the NLB"), Wait("serve rollout", "the serve pods ready")),
            exposed_only=True,
        ),
        DeployStep(
            "metrics stack",
            (part("kube-prometheus-stack", "metrics_stack"),),
            ("system node group",),
            resources=(
                "kubernetes:helm.sh/v3:Release::observability-kube-prometheus-stack",
                "aws:iam/*::observability-*",
            ),
        ),
        DeployStep(
            "monitoring objects",
            (
                part(
                    "PodMonitors, the PrometheusRule, the dashboards, the namespace's policies and labels",
                    "api_objects",
                ),
            ),
            ("metrics stack",),
            resources=(
                "kubernetes:monitoring.coreos.com/*::observability-*",
                "kubernetes:core/v1:ConfigMap::observability-*",
                "kubernetes:networking.k8s.io/v1:NetworkPolicy::observability-*",
                "kubernetes:core/v1:NamespacePatch::observability-*",
            ),
        ),
        DeployStep(
            "DCGM exporter",
            (part("its Helm release on the GPU nodes", "dcgm_exporter"),),
            ("metrics stack", "GPU node group"),
            resources=("kubernetes:helm.sh/v3:Release::observability-dcgm-exporter",),
        ),
        DeployStep(
            "Cluster Autoscaler",
            (part("its role and Helm release", "daemonset_release"),),
            ("system node group",),
            resources=("aws:iam/*::cluster-autoscaler-*", "kubernetes:helm.sh/v3:Release::cluster-autoscaler-*"),
            autoscaled_only=True,
        ),
    ]


def first_deploy_steps(
    exposed: bool = False, autoscaled: bool = False, control_plane: str = "control_plane", gcs_store: bool = True
) -> list[DeployStep]:
    """Every step of a first `pulumi up`; `exposed`: with the serve load balancer (serveExposure not none);
    `autoscaled`: with the Cluster Autoscaler; `control_plane`: the figure of EKS's own minutes; `gcs_store`: with
    the head's GCS store (headFaultTolerance redis, the default)."""
    steps = [
        *network_steps(),
        *cluster_steps(control_plane),
        *serving_steps(),
        *gcs_store_steps(),
        *model_and_app_steps(),
        *other_steps(),
    ]
    return [
        step
        for step in steps
        if (exposed or not step.exposed_only)
        and (autoscaled or not step.autoscaled_only)
        and (gcs_store or not step.gcs_store_only)
    ]


@dataclass(frozen=True)
class Timed:
    step: DeployStep
    start: float
    end: float
    waited_on: str  # the step whose end it started at, "" at the start
    joined: bool  # it started when that step's nodes had joined (its first part), not at its end


def timeline(steps: Sequence[DeployStep]) -> dict[str, Timed]:
    """Each step's start (the latest end of what it waits for) and end."""
    by_name = {step.name: step for step in steps}
    timed: dict[str, Timed] = {}

    def ready(name: str, joined: bool) -> float:
        entry = time(name)
        return entry.start + entry.step.parts[0].seconds if joined else entry.end

    def time(name: str) -> Timed:
        if name not in timed:
            step = by_name[name]
            waits = [(ready(a, False), a, False) for a in step.after if a in by_name]
            waits += [(ready(w.step, w.joined), w.step, w.joined) for w in step.waits if w.step in by_name]
            start, waited_on, joined = max(waits, default=(0.0, "", False))
            timed[name] = Timed(step, start, start + step.seconds, waited_on, joined)
        return timed[name]

    for step in steps:
        time(step.name)
    return timed


def endpoint_seconds(exposed: bool = False, control_plane: str = "control_plane") -> float:
    """When the first `pulumi up` has a serving endpoint: the app RUNNING, and with a load balancer its NLB serving."""
    steps = first_deploy_steps(exposed, control_plane=control_plane)
    return timeline(steps)["NLB serves" if exposed else "serve rollout"].end


def critical_path(timed: dict[str, Timed], last: str) -> list[str]:
    """The steps, first to `last`, each started by the one before it."""
    path = [last]
    while timed[path[-1]].waited_on:
        path.append(timed[path[-1]].waited_on)
    return path[::-1]


def critical_parts(timed: dict[str, Timed], last: str) -> list[Part]:
    """The parts whose seconds add up to `last`'s end: of a step the next one started on once its nodes joined, the
    first part only."""
    path = critical_path(timed, last)
    parts: list[Part] = []
    for name, after in zip(path, [*path[1:], ""], strict=True):
        step = timed[name].step
        parts += step.parts[:1] if after and timed[after].joined else step.parts
    return parts


def sample_minutes() -> float:
    return sum(minutes for _, minutes, _, _ in SAMPLE_STEPS)


# --- the tables ---

FIRST_DEPLOY_BEGIN = "<!-- cold-start-first-deploy:begin (generated by python -m lab.cold_start) -->"
FIRST_DEPLOY_END = "<!-- cold-start-first-deploy:end -->"
BEGIN_MARKER = "<!-- cold-start:begin (generated by python -m lab.cold_start) -->"
END_MARKER = "<!-- cold-start:end -->"
README_BEGIN = "<!-- cold-start-summary:begin (generated by python -m lab.cold_start) -->"
README_END = "<!-- cold-start-summary:end -->"
# The pages the tables are written into, between the markers.
REFERENCE_PAGE = PROJECT_DIR / "docs" / "model-cache.md"
README = PROJECT_DIR / "README.md"


def weakest(p: Part) -> str:
    """How a part was obtained, by its least sure figure: an estimate anywhere makes it an estimate."""
    kinds = {FIGURES[name].kind for name in p.figures}
    return next((kind for kind in (ESTIMATE, CITED, MEASURED) if kind in kinds), MEASURED)


def by_kind(parts: Iterable[Part]) -> str:
    """The seconds of `parts` by how they were obtained."""
    totals = {kind: 0.0 for kind in (MEASURED, CITED, ESTIMATE)}
    for p in parts:
        totals[weakest(p)] += p.seconds
    return ", ".join(f"{kind} {seconds:.0f} s" for kind, seconds in totals.items() if seconds)


def _parts_cell(parts: Iterable[Part]) -> str:
    return "; ".join(f"{p.what} {p.seconds:.0f} s ({p.kinds()})" for p in parts if p.figures)


def first_deploy_rows(exposed: bool) -> list[str]:
    timed = timeline(first_deploy_steps(exposed))
    last = "NLB serves" if exposed else "serve rollout"
    path = set(critical_path(timed, last))
    rows = ["| step | `pulumi up` creates it after | starts (s) | ends (s) | its parts, and how each was obtained |"]
    rows.append("|---|---|---|---|---|")
    for entry in sorted(timed.values(), key=lambda t: (t.start, t.end)):
        step = entry.step
        name = f"**{step.name}**" if step.name in path else step.name
        after = "; ".join([*step.after, *(f"waits for {w.step} ({w.why})" for w in step.waits)])
        rows.append(f"| {name} | {after} | {entry.start:.0f} | {entry.end:.0f} | {_parts_cell(step.parts)} |")
    return rows


def _since_namespace(step: str) -> float:
    """When `step` of dev's first `pulumi up` ends, counted from the serving namespace's creation: the namespace's age
    is what arms the app's alerts (infra/observability/alerts.py), so the alerts' first-deploy cases play these
    (tests/test_alert_rules.py)."""
    timed = timeline(first_deploy_steps())
    return timed[step].end - timed["serving namespace and the image pre-puller"].start


def mirror_seconds() -> float:
    """Until the mirror Job is done: no Ray pod before it (the RayService waits for the mirror)."""
    return _since_namespace("mirror Job")


def first_deploy_seconds() -> float:
    """Until the app is RUNNING (the serve rollout's end)."""
    return _since_namespace("serve rollout")


def first_deploy_summary(exposed: bool) -> str:
    timed = timeline(first_deploy_steps(exposed))
    last = "NLB serves" if exposed else "serve rollout"
    parts = critical_parts(timed, last)
    minutes, slower = timed[last].end / 60, endpoint_seconds(exposed, "control_plane_third_party") / 60
    return (
        f"{minutes:.1f} min to a serving endpoint ({minutes / sample_minutes():.2f} of the sample's "
        f"{sample_minutes():g} min; on its critical path, in bold: {by_kind(parts)}); `pulumi up` ends at "
        f"{max(t.end for t in timed.values() if t.step.resources) / 60:.1f} min. With the third party's control plane "
        f"(`control_plane_third_party`) instead of AWS's average: {slower:.1f} min ({slower / sample_minutes():.2f})"
    )


def event_rows(title: str, steps: list[EventStep]) -> list[str]:
    rows = [f"| **{title}** | | | |"]
    rows += [
        f"| {s.name} | {s.before.seconds:.0f} | {s.after.seconds:.0f} | {_parts_cell([s.after]) or 'nothing'} |"
        for s in steps
    ]
    before, after = sum(s.before.seconds for s in steps), sum(s.after.seconds for s in steps)
    rows.append(f"| total | {before:.0f} | {after:.0f} | after: {by_kind(s.after for s in steps)} |")
    return rows


EVENTS = (
    ("a new GPU node (a replacement, a scale-out)", new_node_steps),
    ("an engine pod restarted on its node", restarted_pod_steps),
    ("a model change (modelSource)", model_change_steps),
)


def events_table() -> list[str]:
    lines = ["| step | before (s) | after (s) | after: its parts, and how each was obtained |", "|---|---|---|---|"]
    for title, steps in EVENTS:
        lines += event_rows(title, steps())
    lines += event_rows("one GPU node of a newCluster upgrade's surge", surge_steps())
    lines.append(
        f"| **surge per GPU node, minutes** | | {surge_minutes()} | rounded up; infra/settings/changes.py says "
        f"{SURGE_MINUTES_PER_GPU_NODE} |"
    )
    return lines


def sample_table() -> list[str]:
    lines = ["| the AWS sample's step | minutes | how obtained |", "|---|---|---|"]
    lines += [f"| {step} | {minutes:g} | {kind}: {quote} |" for step, minutes, kind, quote in SAMPLE_STEPS]
    lines.append(f"| total | {sample_minutes():g} | |")
    return lines


def first_deploy_markdown() -> str:
    """docs/model-cache.md's first `pulumi up`: the steps, when each starts and ends, against the sample's."""
    return "\n".join(
        [
            FIRST_DEPLOY_BEGIN,
            "**A stack without a load balancer (dev):** " + first_deploy_summary(False) + ".",
            "",
            *first_deploy_rows(False),
            "",
            "**With the serve load balancer (prod):** " + first_deploy_summary(True) + ".",
            "",
            *sample_table(),
            FIRST_DEPLOY_END,
        ]
    )


def markdown() -> str:
    """docs/model-cache.md's later events, and every figure with its source."""
    return "\n".join(
        [
            BEGIN_MARKER,
            *events_table(),
            "",
            "| figure | value | how obtained | source |",
            "|---|---|---|---|",
            *(f"| `{name}` | {f.cell()} | {f.kind} | {f.source} |" for name, f in FIGURES.items()),
            END_MARKER,
        ]
    )


def summary_markdown() -> str:
    """The README's table: each event's total, before and after, and what the after rests on."""
    rows = [
        README_BEGIN,
        "| | before (min) | after (min) | after, by how its steps were obtained |",
        "|---|---|---|---|",
    ]
    path_parts = critical_parts(timeline(first_deploy_steps(False)), "serve rollout")
    rows.append(
        f"| first `pulumi up` to a serving endpoint (the sample's steps before) | {sample_minutes():g} | "
        f"{endpoint_seconds(False) / 60:.1f} ({endpoint_seconds(True) / 60:.1f} with an NLB) | {by_kind(path_parts)} |"
    )
    slower = endpoint_seconds(False, "control_plane_third_party") / 60
    rows.append(
        f"| the same, on a third party's control-plane timing ({FIGURES['control_plane_third_party'].cell()}) | "
        f"{sample_minutes():g} | {slower:.1f} | {slower / sample_minutes():.2f} of the sample's |"
    )
    for title, steps in EVENTS:
        before, after = sum(s.before.seconds for s in steps()), sum(s.after.seconds for s in steps())
        rows.append(f"| {title} | {before / 60:.1f} | {after / 60:.1f} | {by_kind(s.after for s in steps())} |")
    return "\n".join([*rows, README_END])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the tables in docs/model-cache.md and README.md")
    blocks = {REFERENCE_PAGE: [first_deploy_markdown(), markdown()], README: [summary_markdown()]}
    if parser.parse_args().write:
        for page, generated in blocks.items():
            for block in generated:
                replace_generated_block(page, block)
    else:
        print("\n\n".join(block for generated in blocks.values() for block in generated))
