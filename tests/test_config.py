"""The typed stack config: defaults from Pulumi.yaml, per-stack overrides, and every bad value."""

from __future__ import annotations

import dataclasses

import pulumi
import pytest

from infra.config import ConfigError, ServeSide, load_config
from tools.offline import load_stack_config, run_stack
from tools.project import SHIPPED_STACKS, declared_config

# The sample's env.sh, variable by variable (stack "unset" has no stack file: pure project defaults).
ENV_SH_DEFAULTS = {
    "region": "sa-east-1",
    "cluster_name": "ray-llm-multinode",
    "kubernetes_version": "1.35",
    "system_node_type": "m7i.xlarge",
    "system_node_count": 1,
    "gpu_node_type": "g6.8xlarge",
    "gpu_node_count": 2,
    "gpu_nodegroup_name": "gpu-workers",
    "gpu_az": None,
    "dlc_image": "763104351884.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-cuda-v1.0",
    "kuberay_version": "1.4.0",
    "ray_version": "2.58.0",
    "ray_service_name": "ray-llm",
    "namespace": "inference",
    "model_id": "qwen3.5-9b",
    "model_source": "Qwen/Qwen3.5-9B",
    "max_model_len": 4096,
}


@pytest.mark.parametrize(("field", "expected"), ENV_SH_DEFAULTS.items())
def test_default_matches_the_samples_env_sh(field, expected):
    assert getattr(load_stack_config(stack="unset"), field) == expected


def test_every_project_key_declares_type_default_and_description():
    for key, spec in declared_config().items():
        if ":" in key:  # provider keys (aws:region) take a plain value
            continue
        assert {"type", "default", "description"} <= spec.keys(), key


def test_the_program_reads_exactly_the_declared_keys():
    read: set[str] = set()

    class RecordingConfig(pulumi.Config):
        def get(self, key, default=None):
            read.add(key)
            return super().get(key, default)

    load_stack_config(stack="unset")  # prepares the runtime with the project's config
    load_config(RecordingConfig())
    assert read == {key for key in declared_config() if ":" not in key}


def test_config_object_is_frozen():
    cfg = load_stack_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.max_model_len = 1  # type: ignore[misc]


def test_dev_stack_overrides_the_context_length():
    assert load_stack_config(stack="dev").max_model_len == 2048


def test_prod_stack_is_production_leaning():
    cfg = load_stack_config(stack="prod")
    assert cfg.nat_gateway_per_az
    assert cfg.protect_resources
    assert "0.0.0.0/0" not in cfg.api_public_access_cidrs
    assert cfg.region == "us-east-1"


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_shipped_stack_evaluates(stack):
    assert run_stack(stack=stack).outputs["clusterName"]


def test_region_override_moves_the_default_image():
    cfg = load_stack_config({"aws:region": "us-west-2"})
    assert cfg.dlc_image == "763104351884.dkr.ecr.us-west-2.amazonaws.com/ray:serve-llm-cuda-v1.0"


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("clusterName", "llm-staging", "cluster_name", "llm-staging"),
        ("systemNodeType", "m7i.2xlarge", "system_node_type", "m7i.2xlarge"),
        ("systemNodeCount", 2, "system_node_count", 2),
        ("gpuNodeType", "g6e.12xlarge", "gpu_node_type", "g6e.12xlarge"),
        ("prefillReplicas", 2, "prefill", ServeSide(replicas=2, max_num_seqs=None, max_num_batched_tokens=None)),
        ("decodeMaxNumSeqs", 512, "decode", ServeSide(replicas=1, max_num_seqs=512, max_num_batched_tokens=None)),
        ("gpuNodegroupName", "l40s", "gpu_nodegroup_name", "l40s"),
        ("gpuAz", "sa-east-1b", "gpu_az", "sa-east-1b"),
        ("dlcImage", "example.com/ray/llm:2.58.0", "dlc_image", "example.com/ray/llm:2.58.0"),
        ("kuberayVersion", "1.4.2", "kuberay_version", "1.4.2"),
        ("rayVersion", "2.59.0", "ray_version", "2.59.0"),
        ("rayServiceName", "chat", "ray_service_name", "chat"),
        ("namespace", "llm", "namespace", "llm"),
        ("modelId", "llama", "model_id", "llama"),
        ("modelSource", "meta-llama/Llama-3.1-8B", "model_source", "meta-llama/Llama-3.1-8B"),
        ("maxModelLen", 8192, "max_model_len", 8192),
        ("vpcCidr", "10.20.0.0/16", "vpc_cidr", "10.20.0.0/16"),
        ("natGatewayPerAz", True, "nat_gateway_per_az", True),
        ("apiPublicAccessCidrs", ["198.51.100.0/24"], "api_public_access_cidrs", ("198.51.100.0/24",)),
        ("gpuRootVolumeGiB", 400, "gpu_root_volume_gib", 400),
        ("capacityReservationId", "cr-0123456789abcdef0", "capacity_reservation_id", "cr-0123456789abcdef0"),
        ("serveExposure", "internal", "serve_exposure", "internal"),
        ("serveReadyTimeoutMinutes", 90, "serve_ready_timeout_minutes", 90),
    ],
)
def test_override_reaches_the_config(key, value, field, expected):
    assert getattr(load_stack_config({key: value}), field) == expected


def test_kubernetes_version_override_reaches_the_config_with_its_kube_proxy():
    cfg = load_stack_config({"kubernetesVersion": "1.34", "kubeProxyVersion": "v1.34.1-eksbuild.2"})
    assert (cfg.kubernetes_version, cfg.kube_proxy_version) == ("1.34", "v1.34.1-eksbuild.2")


def test_kube_proxy_of_another_kubernetes_minor_is_rejected():
    """EKS publishes one kube-proxy add-on line per Kubernetes version
    (https://docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html, "kube-proxy versions":
    1.35 -> v1.35.x-eksbuild.N, 1.34 -> v1.34.x-eksbuild.N; `aws eks describe-addon-versions` lists each
    build as compatible with its own cluster version only), and kube-proxy must never be newer than the
    API server (https://kubernetes.io/releases/version-skew-policy/#kube-proxy). Changing
    kubernetesVersion alone would leave the pinned v1.35 kube-proxy on a 1.34 control plane.
    """
    with pytest.raises(ConfigError) as rejected:
        run_stack({"kubernetesVersion": "1.34"})
    assert rejected.value.declared_resources == []
    (problem,) = rejected.value.problems
    assert problem.startswith(
        "kubeProxyVersion='v1.35.0-eksbuild.2' is invalid: kube-proxy must match kubernetesVersion 1.34"
    )


BAD_VALUES = [
    ("gpuNodeCount", 1, "the layout needs exactly 2"),
    ("gpuNodeCount", 3, "the layout needs exactly 2"),
    ("gpuNodeCount", "two", "an integer >= 0"),
    ("gpuNodeType", "g6.xlarge", "no EFA network interface"),
    ("gpuNodeType", "c5n.18xlarge", "has no GPU"),
    ("gpuNodeType", "m7i.xlarge", "not a known EFA-capable GPU instance type"),
    ("systemNodeCount", 0, "an integer >= 1"),
    ("maxModelLen", "4k", "an integer >= 1"),
    ("maxModelLen", "4096.5", "an integer >= 1"),
    ("maxModelLen", 0, "an integer >= 1"),
    ("maxModelLen", -1, "an integer >= 1"),
    ("kubernetesVersion", "v1.35", "MAJOR.MINOR"),
    ("kubernetesVersion", "1.35.2", "MAJOR.MINOR"),
    ("aws:region", "sa-east", "AWS region name"),
    ("aws:region", "SA-EAST-1", "AWS region name"),
    ("gpuAz", "us-east-1a", "not an Availability Zone of region 'sa-east-1'"),
    ("gpuAz", "sa-east-1", "an Availability Zone name"),
    ("clusterName", "-bad", "letters, digits"),
    ("rayServiceName", "Ray_LLM", "DNS label"),
    ("namespace", "Inference", "DNS label"),
    ("vpcCidr", "10.0.0.0/24", "/16 to /20"),
    ("natGatewayPerAz", "yes", "true or false"),
    ("apiPublicAccessCidrs", ["10.0.0.300/24"], "IPv4 CIDRs"),
    ("adminPrincipalArns", ["admin"], "IAM role or user ARNs"),
    ("dlcImage", "example.com/ray/llm:latest", "'latest' is not a pinned tag"),
    ("dlcImage", "example.com/ray/llm", "pinned by tag or digest"),
    ("kuberayVersion", "latest", "a version such as 1.4.0"),
    ("capacityReservationId", "reservation-1", "cr-0123456789abcdef0"),
    ("serveExposure", "public", "none, internal, internet-facing"),
    ("serveExposure", "internet-facing", "needs serveSourceCidrs"),
    ("hfToken", "hf_plain", "pulumi config set --secret hfToken"),
]


@pytest.mark.parametrize(("key", "value", "allowed"), BAD_VALUES)
def test_bad_value_is_rejected_naming_key_value_and_what_is_allowed(key, value, allowed):
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({key: value})
    message = str(rejected.value)
    assert key in message
    assert allowed in message
    if key != "hfToken":  # the token itself is never echoed
        assert str(value if not isinstance(value, list) else value[0]) in message


def test_internet_facing_endpoint_open_to_everyone_is_rejected():
    with pytest.raises(ConfigError, match="narrower than the whole internet"):
        load_stack_config({"serveExposure": "internet-facing", "serveSourceCidrs": ["0.0.0.0/0"]})


def test_plain_text_token_is_not_echoed():
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({"hfToken": "hf_plain"})
    assert "hf_plain" not in str(rejected.value)


@pytest.mark.parametrize(("key", "value", "allowed"), BAD_VALUES)
def test_bad_value_declares_no_resource(key, value, allowed):
    with pytest.raises(ConfigError) as rejected:
        run_stack({key: value})
    assert rejected.value.declared_resources == []


def test_all_problems_are_reported_together():
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({"gpuNodeCount": 1, "maxModelLen": 0, "kubernetesVersion": "2"})
    assert len(rejected.value.problems) == 3
