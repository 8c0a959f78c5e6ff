"""The typed stack config: defaults from Pulumi.yaml, per-stack overrides, and every bad value."""

from __future__ import annotations

import dataclasses
import ipaddress
from operator import attrgetter

import pulumi
import pytest

from infra.network.subnets import plan_subnets
from infra.nodes.node_groups import describe_instance_type
from infra.settings.config import load_config
from infra.settings.config_keys import aws_provider_keys, kubernetes_provider_keys
from infra.settings.kinds import API_ALLOW_LIST_COMMAND, VALIDATED_KUBERAY_VERSIONS
from infra.settings.regions import DEFAULT_IMAGE_RAY_VERSION
from infra.settings.rules_network import covers_the_internet, vpc_block_reason
from infra.settings.stack_config import ConfigError, ServeSide
from tests.conftest import rejection
from tests.schemas import kuberay_dir
from tools.offline import load_stack_config
from tools.project import PROJECT_DIR, declared_config

# The sample's env.sh, variable by variable (stack "unset" has no stack file: pure project defaults), but its KubeRay
# 1.4.0, which has no Ray token: kuberayVersion defaults to 1.7.0 (tests/test_serving.py).
ENV_SH_DEFAULTS = {
    "region": "sa-east-1",
    "cluster_name": "ray-llm-multinode",
    "kubernetes_version": "1.35",
    "system_node_type": "m7i.xlarge",
    "system_node_count": 1,
    "gpu_node_type": "g6.8xlarge",
    "topology.gpu_nodes": 2,
    "gpu_nodegroup_name": "gpu-workers",
    "gpu_az": None,
    "dlc_image": "763104351884.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-cuda-v1.0",
    "ray_version": "2.58.0",
    "ray_service_name": "ray-llm",
    "namespace": "inference",
    "model_id": "qwen3.5-9b",
    "model_source": "Qwen/Qwen3.5-9B",
    "max_model_len": 4096,
    "kv_buffer_device": "cuda",
}


@pytest.mark.parametrize(("field", "expected"), ENV_SH_DEFAULTS.items())
def test_default_matches_the_samples_env_sh(field, expected):
    assert attrgetter(field)(load_stack_config(stack="unset")) == expected


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
    load_config(RecordingConfig(), describe_instance_type=describe_instance_type)
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


def test_every_shipped_stack_evaluates(shipped):
    assert shipped.outputs["clusterName"]


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
        (
            "prefillReplicas",
            2,
            "prefill",
            ServeSide(replicas=2, max_num_seqs=32, max_num_batched_tokens=None, prefix_caching=False),
        ),
        (
            "decodeMaxNumSeqs",
            512,
            "decode",
            ServeSide(replicas=1, max_num_seqs=512, max_num_batched_tokens=None, prefix_caching=False),
        ),
        (
            "prefixCaching",
            "on",
            "prefill",
            ServeSide(replicas=1, max_num_seqs=32, max_num_batched_tokens=None, prefix_caching=True),
        ),
        ("gpuNodegroupName", "l40s", "gpu_nodegroup_name", "l40s"),
        ("gpuAz", "sa-east-1b", "gpu_az", "sa-east-1b"),
        ("dlcImage", "example.com/ray/llm:2.58.0", "dlc_image", "example.com/ray/llm:2.58.0"),
        ("rayServiceName", "chat", "ray_service_name", "chat"),
        ("namespace", "llm", "namespace", "llm"),
        ("modelId", "llama", "model_id", "llama"),
        ("modelSource", "meta-llama/Llama-3.1-8B", "model_source", "meta-llama/Llama-3.1-8B"),
        ("maxModelLen", 8192, "max_model_len", 8192),
        ("vpcCidr", "10.20.0.0/16", "vpc_cidr", "10.20.0.0/16"),
        ("natGatewayPerAz", True, "nat_gateway_per_az", True),
        ("apiPublicAccessCidrs", ["100.24.30.0/24"], "api_public_access_cidrs", ("100.24.30.0/24",)),
        ("gpuRootVolumeGiB", 400, "gpu_root_volume_gib", 400),
        ("capacityReservationId", "cr-0123456789abcdef0", "capacity_reservation_id", "cr-0123456789abcdef0"),
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
    API server (https://kubernetes.io/releases/version-skew-policy/#kube-proxy). Unset, kube-proxy follows
    kubernetesVersion (infra/preflight/offerings.py); a pin of another minor would put v1.35 on a 1.34 control plane.
    """
    (problem,) = rejection({"kubernetesVersion": "1.34", "kubeProxyVersion": "v1.35.0-eksbuild.2"}).problems
    assert problem.startswith(
        "kubeProxyVersion='v1.35.0-eksbuild.2' is invalid: kube-proxy must match kubernetesVersion 1.34"
    )


# Bounds from AWS, as infra/settings/config.py cites them: 450 nodes per managed node group
# (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html); gp3 holds at most 16384 GiB
# (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html); assumed-role credentials last at
# most 12 h (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_update-role-settings.html).
BAD_VALUES = [
    ("gpuNodeType", "g6.xlarge", "no EFA network interface"),
    ("gpuNodeType", "c5n.18xlarge", "supports EFA but has no NVIDIA GPU"),
    ("gpuNodeType", "m7i.xlarge", "has neither NVIDIA GPUs nor EFA"),
    ("gpuNodeType", "g9z.8xlarge", "EC2 does not know it in sa-east-1"),
    ("gpuNodeType", "G6.8XLARGE", "allowed is an EC2 instance type such as g6.8xlarge"),
    ("systemNodeCount", 0, "an integer from 1 to 450"),
    ("systemNodeCount", 451, "EKS allows 450 nodes per managed node group"),
    # A cluster needs "at least two subnets that are in different Availability Zones"
    # (https://docs.aws.amazon.com/eks/latest/userguide/network_reqs.html).
    ("maxAzs", 1, "EKS needs two Availability Zones"),
    ("maxAzs", 8, "vpcCidr has room for 7"),
    ("maxModelLen", "4k", "an integer from 1 to 1048576"),
    ("maxModelLen", "4096.5", "an integer from 1 to 1048576"),
    ("maxModelLen", 0, "an integer from 1 to 1048576"),
    ("maxModelLen", -1, "an integer from 1 to 1048576"),
    ("maxModelLen", 100000000, "an integer from 1 to 1048576 tokens"),
    ("gpuRootVolumeGiB", 100000, "a gp3 volume holds at most 16384 GiB"),
    ("gpuRootVolumeGiB", 10, "an integer from 50 to 16384"),
    ("serveReadyTimeoutMinutes", 100000, "credentials last at most 12 h"),
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
    ("vpcCidr", "10.0.0.0/15", "/16 to /20"),
    ("vpcCidr", "10.0.0.1/16", "has host bits set"),
    ("vpcCidr", "999.1.2.3/16", "Octet 999 (> 255) not permitted"),
    # Ranges no VPC can use (infra/settings/config.py NON_VPC_RANGES: RFC 6890; 172.17.0.0/16 per
    # https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html).
    ("vpcCidr", "224.0.0.0/16", "multicast"),
    ("vpcCidr", "0.0.0.0/16", "'this network'"),
    ("vpcCidr", "172.17.0.0/16", "the VPC user guide says not to use it"),
    ("vpcCidr", "169.254.0.0/16", "link-local"),
    ("natGatewayPerAz", "yes", "true or false"),
    ("apiPublicAccessCidrs", ["10.0.0.300/24"], "IPv4 CIDRs"),
    # RFC 5737 reserves 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 for documentation.
    ("apiPublicAccessCidrs", ["198.51.100.0/24"], "it lies in 198.51.100.0/24, space no internet client comes from"),
    ("apiPublicAccessCidrs", ["203.0.113.7/32"], "it lies in 203.0.113.0/24, space no internet client comes from"),
    ("adminPrincipalArns", ["admin"], "IAM role or user ARNs"),
    ("dlcImage", "example.com/ray/llm:latest", "uses the 'latest' tag"),
    ("dlcImage", "example.com/ray/llm", "pinned by tag or digest"),
    ("kuberayVersion", "latest", "a version such as 1.4.0"),
    ("kuberayVersion", "9.9.9", "validated against (1.4.0, 1.7.0)"),
    ("rayVersion", "2.59.0", "the default image runs Ray 2.58.0"),
    ("capacityReservationId", "reservation-1", "cr-0123456789abcdef0"),
    ("serveExposure", "public", "none, internal, internet-facing"),
    ("serveExposure", "internet-facing", "needs serveSourceCidrs"),
    ("serveSourceCidrs", ["192.0.2.0/24"], "RFC 5737 documentation ranges reach no one"),
    ("hfToken", "hf_plain", "pulumi config set --secret hfToken"),
    # AWS tag values: up to 256 characters of letters, numbers, spaces and _ . : / = + - @
    # (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html).
    ("owner", "x" * 300, "at most 256 letters"),
    ("owner", "team\nlead", "AWS tag value rules"),
    ("costCenter", "ml;<dev>", "AWS tag value rules"),
    ("kvBufferDevice", "gpu", "auto, cuda, cpu"),
]


def test_the_narrowest_vpc_the_subnet_plan_can_cut_is_a_22():
    """A subnet is /16 to /28 (https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html), and the plan's
    public subnets are its narrowest: a /22 VPC gets public /28s. AWS keeps 5 addresses of each subnet (the same page),
    a NAT gateway takes one, and 10 are left of the 8 an internet-facing NLB needs per subnet
    (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html)."""
    public = ipaddress.IPv4Network(plan_subnets("10.20.0.0/22", ("sa-east-1a", "sa-east-1b"))[0].public_cidr)
    assert public.prefixlen == 28
    assert vpc_block_reason("10.20.0.0/22") is None
    assert vpc_block_reason("10.20.0.0/23").startswith("a /23 block")


def test_a_vpc_wider_than_a_16_is_refused_as_aws_refuses_it():
    """A VPC's IPv4 block is /16 to /28 (https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)."""
    assert vpc_block_reason("10.0.0.0/15") == "a /15 block; AWS takes a VPC of /16 to /28"


def test_the_setting_keeps_private_subnets_of_at_least_a_23():
    """By the VPC CNI's default WARM_ENI_TARGET=1 each node keeps a whole spare ENI of addresses
    (https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/eni-and-ip-target.md), so vpcCidr stops at /20 (private
    /23s) although the plan could cut a /22."""
    private = ipaddress.IPv4Network(
        plan_subnets(load_stack_config({"vpcCidr": "10.20.0.0/20"}).vpc_cidr, ("a", "b"))[0].private_cidr
    )
    assert private.prefixlen == 23
    (problem,) = rejection({"vpcCidr": "10.20.0.0/21"}).problems
    assert problem.startswith("vpcCidr='10.20.0.0/21' is invalid (a /21 block leaves too few addresses per AZ")


@pytest.mark.parametrize(("key", "value", "allowed"), BAD_VALUES)
def test_bad_value_is_rejected_naming_key_value_and_what_is_allowed(key, value, allowed):
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({key: value})
    message = str(rejected.value)
    assert key in message
    assert allowed in message
    if key != "hfToken":  # the token itself is never echoed
        for shown in value if isinstance(value, list) else [value]:
            assert repr(str(shown)).strip("'") in message or str(shown) in message


# Rejections that take more than one key, or name something other than a value.
REJECTED_COMBINATIONS = {
    "empty-api-allow-list": (
        {"apiPublicAccessCidrs": []},
        ["apiPublicAccessCidrs is invalid: empty", "0.0.0.0/0", f"`{API_ALLOW_LIST_COMMAND}`"],
    ),
    "serve-open-to-all": (
        {"serveExposure": "internet-facing", "serveSourceCidrs": ["0.0.0.0/0"]},
        ["serveSourceCidrs narrower than the whole internet", "0.0.0.0/0"],
    ),
    "serve-two-halves": (
        {"serveExposure": "internet-facing", "serveSourceCidrs": ["0.0.0.0/1", "128.0.0.0/1"]},
        ["narrower than the whole internet", "0.0.0.0/1", "128.0.0.0/1"],
    ),
    "serve-everything-but-private": (
        {
            "serveExposure": "internet-facing",
            # Every address but 10.0.0.0/8, which is private anyway.
            "serveSourceCidrs": [
                *("0.0.0.0/5", "8.0.0.0/7", "11.0.0.0/8", "12.0.0.0/6", "16.0.0.0/4"),
                *("32.0.0.0/3", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/3", "224.0.0.0/3"),
            ],
        },
        ["narrower than the whole internet", "every internet address"],
    ),
    "project-typo": (
        {"gpuNodeTyp": "g6.8xlarge"},
        ["ray-llm-eks:gpuNodeTyp='g6.8xlarge' is not a setting", "did you mean 'gpuNodeType'?"],
    ),
    "aws-typo": (
        {"aws:regoin": "us-west-2"},
        ["aws:regoin='us-west-2' is not a setting of the aws provider", "'region'"],
    ),
    "kubernetes-typo": (
        {"kubernetes:enableServerSideAply": True},
        ["kubernetes:enableServerSideAply='true' is not a setting", "'enableServerSideApply'"],
    ),
    "unvalidated-override-is-no-typo-pass": (
        {"allowUnvalidatedKuberayVersion": "sure"},
        ["allowUnvalidatedKuberayVersion='sure' is invalid: allowed is true or false"],
    ),
}


@pytest.mark.parametrize(("overrides", "expected"), REJECTED_COMBINATIONS.values(), ids=REJECTED_COMBINATIONS)
def test_rejection_names_what_is_wrong_and_what_is_allowed(overrides, expected):
    with pytest.raises(ConfigError) as rejected:
        load_stack_config(overrides)
    for fragment in expected:
        assert fragment in str(rejected.value)


@pytest.mark.parametrize(
    "overrides",
    [dict([(key, value)]) for key, value, _ in BAD_VALUES] + [o for o, _ in REJECTED_COMBINATIONS.values()],
    ids=[f"{key}={value!r}"[:60] for key, value, _ in BAD_VALUES] + list(REJECTED_COMBINATIONS),
)
def test_rejected_config_declares_no_resource(overrides):
    rejection(overrides)


def _wrong_type(spec: object) -> object:
    """A value of another type than the key declares: a mapping for a string, text for the rest."""
    declared_type = spec["type"] if isinstance(spec, dict) else "string"
    return {"string": {"not": "a string"}, "integer": "ten", "boolean": 1, "array": "not-a-list"}[declared_type]


@pytest.mark.parametrize("key", list(declared_config()))
def test_a_value_of_the_wrong_type_is_rejected_before_any_resource(key):
    assert key in str(rejection({key: _wrong_type(declared_config()[key])}))


def test_a_misspelt_secret_key_does_not_echo_its_value():
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({"hfTokn": "hf_secret_value"}, secret_keys=("hfTokn",))
    assert "ray-llm-eks:hfTokn='[secret]' is not a setting of this project (did you mean 'hfToken'?)" in str(
        rejected.value
    )
    assert "hf_secret_value" not in str(rejected.value)


def test_provider_settings_are_not_typos():
    settings = {"aws:profile": "ml-dev", "aws:skipMetadataApiCheck": False, "kubernetes:deleteUnreachable": True}
    cfg = load_stack_config(settings)
    assert cfg.region == "sa-east-1"


def test_provider_keys_come_from_the_installed_sdks():
    """pulumi-aws's generated config module reads each key with `__config__.get*('<key>')`
    (pulumi/pulumi-aws sdk/python/pulumi_aws/config/vars.py); its Provider takes the same ones."""
    from pulumi._types import input_type_py_to_pulumi_names
    from pulumi_aws.provider import ProviderArgs

    assert aws_provider_keys() == frozenset(input_type_py_to_pulumi_names(ProviderArgs).values())
    assert {"region", "profile", "assumeRoles", "defaultTags"} <= aws_provider_keys()
    assert {"kubeconfig", "context", "enableServerSideApply"} <= kubernetes_provider_keys()


def test_encrypted_value_of_a_setting_that_is_no_secret_is_rejected():
    with pytest.raises(ConfigError, match=r"owner is stored encrypted .* but is not a secret setting"):
        load_stack_config({"owner": "ml-platform"}, secret_keys=("owner",))


def test_unvalidated_kuberay_version_is_deployed_only_when_allowed_and_warned(monkeypatch):
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    cfg = load_stack_config({"kuberayVersion": "1.5.0", "allowUnvalidatedKuberayVersion": True})
    assert cfg.kuberay_version == "1.5.0"
    assert warnings and "kuberayVersion='1.5.0' was not validated" in warnings[0]


@pytest.mark.parametrize("version", VALIDATED_KUBERAY_VERSIONS)
def test_a_validated_kuberay_version_is_deployed_without_a_warning(monkeypatch, version):
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    assert load_stack_config({"kuberayVersion": version}).kuberay_version == version
    assert not [warning for warning in warnings if "was not validated" in warning]


def test_a_custom_image_takes_the_users_ray_version():
    cfg = load_stack_config({"dlcImage": "example.com/ray/llm:2.59.0", "rayVersion": "2.59.0"})
    assert cfg.ray_version == "2.59.0"


def test_default_image_ray_is_the_ray_the_tests_validate_with():
    """The serve config is validated with Ray's own schemas (requirements-test.txt pins that Ray)."""
    pins = (PROJECT_DIR / "requirements-test.txt").read_text()
    assert f"ray[serve]=={DEFAULT_IMAGE_RAY_VERSION}" in pins
    assert declared_config()["rayVersion"]["default"] == DEFAULT_IMAGE_RAY_VERSION


def test_validated_kuberay_versions_have_their_crds():
    for version in VALIDATED_KUBERAY_VERSIONS:
        assert (kuberay_dir(version) / "ray.io_rayservices.yaml").is_file()


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["0.0.0.0/0"], True),
        (["0.0.0.0/1", "128.0.0.0/1"], True),
        (["0.0.0.0/1"], False),
        (["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"], False),
        (["100.24.20.0/24"], False),
    ],
)
def test_covering_the_internet_is_judged_on_the_union(cidrs, covered):
    assert covers_the_internet(tuple(cidrs)) is covered


def test_all_problems_are_reported_together():
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({"prefillReplicas": 0, "maxModelLen": 0, "kubernetesVersion": "2"})
    assert len(rejected.value.problems) == 3


def test_plain_text_token_is_not_echoed():
    with pytest.raises(ConfigError) as rejected:
        load_stack_config({"hfToken": "hf_plain"})
    assert "hf_plain" not in str(rejected.value)


# A model of attention layers only, whose KV cache vLLM's NIXL connector can stage in host memory.
PURE_ATTENTION_MODEL = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize(
    ("gpu_node_type", "device"),
    [("g6.8xlarge", "cuda"), ("g6e.12xlarge", "cuda"), ("p5.48xlarge", "cuda"), ("g5.8xlarge", "cpu")],
)
def test_kv_buffer_device_auto_follows_the_instance_types_rdma_read(gpu_node_type, device):
    """AWS EC2 User Guide, "Elastic Fabric Adapter", Supported instance types
    (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types): g6.8xlarge (Nitro v4) has
    "RDMA read support: Yes", g5 (Nitro v3) "No". libfabric's EFA provider
    (ofiwg/libfabric prov/efa/src/efa_hmem.c, efa_hmem_info_check_p2p_support_cuda) registers CUDA memory
    with the EFA device itself, so NIXL's LIBFABRIC backend can read GPU-resident KV directly there. (A model
    without Mamba-type state: the default one cannot take cpu, tests/test_bad_input.py.)"""
    overrides = {"gpuNodeType": gpu_node_type, "modelSource": PURE_ATTENTION_MODEL}
    assert load_stack_config(overrides).kv_buffer_device == device


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_kv_buffer_device_can_be_pinned(device):
    overrides = {"gpuNodeType": "g5.8xlarge", "kvBufferDevice": device, "modelSource": PURE_ATTENTION_MODEL}
    assert load_stack_config(overrides).kv_buffer_device == device
