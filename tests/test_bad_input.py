"""Bad values a new user types, by class: each is refused before any resource, naming the key (and the list item),
the value and what is allowed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from infra.settings.kinds import API_ALLOW_LIST_COMMAND
from infra.settings.reader import SECRET_SETTINGS
from tests.conftest import (
    API_KEYS,
    EXPOSED_SECRET_KEYS,
    OPERATOR_CERTIFICATE,
    OPERATOR_CIDRS,
    SERVE_AUTOSCALING,
    rejection,
)
from tools.instance_type_facts import INSTANCE_TYPES, InstanceTypeFacts
from tools.offline import StackRun, load_stack_config, run_stack
from tools.project import declared_config

# 41 distinct /32s of one public /24: one more than EKS takes.
FORTY_ONE = [f"100.24.10.{host}/32" for host in range(1, 42)]


@pytest.mark.parametrize("count", [1, 40])
def test_up_to_forty_api_cidrs_are_accepted(count):
    assert len(load_stack_config({"apiPublicAccessCidrs": FORTY_ONE[:count]}).api_public_access_cidrs) == count


def test_more_than_forty_api_cidrs_are_refused_before_eks_refuses_the_cluster():
    """EKS quota "Public endpoint access CIDR ranges per cluster": 40, adjustable "No"
    (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html; aws/containers-roadmap#2174 asks for
    more). CreateCluster would fail mid-deploy, after the VPC and IAM role exist."""
    (problem,) = rejection({"apiPublicAccessCidrs": FORTY_ONE}).problems
    assert problem.startswith("apiPublicAccessCidrs is invalid: 41 CIDRs: EKS allows at most 40")
    assert "docs/policy.md" in problem


@pytest.mark.parametrize(
    ("cidrs", "reason"),
    [
        pytest.param(["0.0.0.0/0"], "[0]='0.0.0.0/0' is invalid (it is the whole internet)", id="everything"),
        # RFC 1918, RFC 6598 shared, loopback, link-local, multicast, reserved: RFC 6890 marks none of them
        # globally reachable, so no internet client reaches the public endpoint from there.
        pytest.param(["10.0.0.0/8"], "[0]='10.0.0.0/8' is invalid (it lies in 10.0.0.0/8", id="rfc1918-10"),
        pytest.param(["172.20.1.0/24"], "[0]='172.20.1.0/24' is invalid (it lies in 172.16.0.0/12", id="rfc1918-172"),
        pytest.param(["192.168.7.9/32"], "(it lies in 192.168.0.0/16", id="rfc1918-192"),
        pytest.param(["100.64.3.0/24"], "(it lies in 100.64.0.0/10", id="shared-cgnat"),
        pytest.param(["127.0.0.1/32"], "(it lies in 127.0.0.0/8", id="loopback"),
        pytest.param(["169.254.169.254/32"], "(it lies in 169.254.0.0/16", id="link-local"),
        pytest.param(["239.1.1.1/32"], "(it lies in 224.0.0.0/4", id="multicast"),
        pytest.param(["250.0.0.0/8"], "(it lies in 240.0.0.0/4", id="reserved"),
        pytest.param(["100.24.10.0/24", "10.1.0.0/16"], "apiPublicAccessCidrs[1]='10.1.0.0/16'", id="second-item"),
    ],
)
def test_api_cidrs_must_be_internet_ranges(cidrs, reason):
    """EKS's public endpoint is reached from the internet; with endpointPrivateAccess on, requests from inside
    the VPC use the private endpoint (https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html), so a
    private or reserved range admits no one and 0.0.0.0/0 admits everyone."""
    (problem,) = rejection({"apiPublicAccessCidrs": cidrs}).problems
    assert reason in problem
    assert "allowed is public IPv4 CIDRs" in problem


@pytest.mark.parametrize(
    "cidrs",
    [
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"],
        # Every public address, with the private and reserved blocks carved out.
        ["1.0.0.0/8", "2.0.0.0/7", "4.0.0.0/6", "8.0.0.0/5", "16.0.0.0/4", "32.0.0.0/3", "64.0.0.0/2", "128.0.0.0/1"],
    ],
    ids=["halves", "quarters", "all-but-private"],
)
def test_api_cidrs_that_together_admit_the_internet_are_refused(cidrs):
    (problem,) = rejection({"apiPublicAccessCidrs": cidrs}).problems
    assert problem.startswith(f"apiPublicAccessCidrs is invalid: {cidrs} together admit every internet address")


def test_a_public_range_that_overlaps_private_space_is_still_an_internet_range():
    """8.0.0.0/5 holds 10.0.0.0/8 but also public addresses; it is wide, not wrong."""
    assert load_stack_config({"apiPublicAccessCidrs": ["8.0.0.0/5"]}).api_public_access_cidrs == ("8.0.0.0/5",)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("vpcCidr", "10.0.0.0/255.255.0.0"),
        ("vpcCidr", "10.0.0.0/0.0.255.255"),
        ("vpcCidr", "10.0.0.0/16\n"),
        ("vpcCidr", "10.0.0.0"),
        ("apiPublicAccessCidrs", ["100.24.0.0/255.255.0.0"]),
        ("apiPublicAccessCidrs", ["100.24.10.7"]),
        ("apiPublicAccessCidrs", ["100.24.10.0/24\n"]),
        ("serveSourceCidrs", ["10.0.0.0/255.0.0.0"]),
    ],
)
def test_cidrs_are_taken_in_prefix_notation_only(key, value):
    """Python's ipaddress also reads a netmask or hostmask after the slash; AWS's CIDR fields take a prefix
    length (EC2 CreateVpc CidrBlock "The IPv4 network range for the VPC, in CIDR notation. For example,
    10.0.0.0/16", https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html), so the value would
    be checked in one form and passed on in another."""
    problems = rejection({key: value}).problems
    assert any("not an IPv4 CIDR in a.b.c.d/prefix notation" in p and p.startswith(key) for p in problems)


@pytest.mark.parametrize("key", ["apiPublicAccessCidrs", "serveSourceCidrs"])
def test_a_repeated_cidr_is_named_with_the_item_it_repeats(key):
    (problem,) = rejection({key: ["100.24.10.0/24", "100.24.20.0/24", "100.24.10.0/24"]}).problems
    assert problem.startswith(f"{key}[2]='100.24.10.0/24' is invalid: it repeats {key}[0]")


@pytest.mark.parametrize("value", ['"100.24.10.0/24"', "[100.24.10.0/24]", "[1, 2]", '{"a": "b"}'])
def test_a_list_key_that_is_not_a_json_list_of_strings_says_so(value):
    (problem,) = rejection({"apiPublicAccessCidrs": value}).problems
    assert problem.startswith(f"apiPublicAccessCidrs={value!r} is invalid: allowed is a JSON list of public IPv4")


# --- the example a message suggests is one the check accepts ---

CIDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}/\d{1,2}\b")
ALLOW_LIST_FIELD = {"apiPublicAccessCidrs": "api_public_access_cidrs", "serveSourceCidrs": "serve_source_cidrs"}


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        ("apiPublicAccessCidrs", "<your-ip>/32"),
        ("apiPublicAccessCidrs", "203.0.113.7/32"),
        ("apiPublicAccessCidrs", "10.1.0.0/16"),
        ("serveSourceCidrs", "<your-ip>/32"),
        ("serveSourceCidrs", "192.0.2.0/24"),
    ],
)
def test_the_example_a_refusal_suggests_passes_the_check_that_refused(key, refused):
    """What the refusal says is allowed names an example; copying it gives a value the same key accepts."""
    (problem,) = rejection({key: [refused]}).problems
    examples = CIDR.findall(problem.split("allowed is", 1)[1])
    assert examples, problem
    for suggested in examples:
        assert getattr(load_stack_config({key: [suggested]}), ALLOW_LIST_FIELD[key]) == (suggested,)


CHECKIP_ANSWER = "100.24.10.7\n"


def run_as_copied(command: str, tmp_path: Path, program: str = "pulumi") -> list[str]:
    """The arguments `program` receives when bash runs `command` as a user pastes it, with `curl` answering as
    checkip.amazonaws.com does (the caller's public IPv4 address and a newline) and `program` replaced by one that
    prints its arguments as JSON."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "curl").write_text(f"#!/bin/sh\nprintf '{CHECKIP_ANSWER.strip()}\\n'\n")
    (stubs / program).write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    ran = subprocess.run(
        ["bash", "-c", command],
        env={"PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(ran.stdout)


def test_the_allow_list_command_the_refusal_names_runs_as_copied(tmp_path):
    """Bash reads `<word` as an input redirection (bash manual, Redirections: "Redirecting Input"), so a command
    ending in `<your-ip>/32` fails before pulumi runs; `$(...)` is replaced by the command's output with trailing
    newlines deleted (bash manual, Command Substitution). checkip.amazonaws.com is AWS's own "what is my public IP"
    service (EC2 user guide, "Rules for connecting to instances from your computer":
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-rules-reference.html)."""
    (problem,) = rejection({"apiPublicAccessCidrs": []}).problems
    assert f"`{API_ALLOW_LIST_COMMAND}`" in problem
    arguments = run_as_copied(API_ALLOW_LIST_COMMAND, tmp_path)
    assert arguments == ["config", "set", "--path", "apiPublicAccessCidrs[0]", "100.24.10.7/32"]
    assert load_stack_config({"apiPublicAccessCidrs": [arguments[-1]]}).api_public_access_cidrs == ("100.24.10.7/32",)


# --- a trailing newline (`re.match` with `$` matches before a final "\n"; the checks use fullmatch / \Z) ---

# A valid value for each string key whose default is empty; a key with a default uses the default.
EXAMPLES = {
    "models": json.dumps(
        [
            {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"},
            {"id": "small", "source": "Qwen/Qwen3-8B", "serving": "aggregated"},
        ]
    ),
    "vpcCniVersion": "v1.21.1-eksbuild.1",
    "corednsVersion": "v1.13.2-eksbuild.1",
    "kubeProxyVersion": "v1.35.0-eksbuild.2",
    "gpuAz": "sa-east-1a",
    "capacityReservationId": "cr-0123456789abcdef0",
    "dlcImage": "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-2.58.0",
    "owner": "ml-platform",
    "costCenter": "ml-dev",
    "ampWorkspaceUrl": "https://aps-workspaces.sa-east-1.amazonaws.com/workspaces/ws-1a2b3c4d/",
    "serveCertificateArn": "arn:aws:acm:sa-east-1:123456789012:certificate/0f6e5d4c-3b2a-4190-8877-665544332211",
    "alertSnsTopicArn": "arn:aws:sns:sa-east-1:123456789012:ray-llm-alerts",
    "runbookUrl": "https://github.com/example/ray-llm-eks/blob/main/docs/runbook.md",
}
# The secret settings' values are never shown: hfToken is checked only for being a secret, serveApiKeys's keys in
# tests/test_serve_endpoint.py, the alert receivers' credentials in tests/test_alert_receivers.py.
STRING_KEYS = sorted(
    key
    for key, spec in declared_config().items()
    if isinstance(spec, dict) and spec["type"] == "string" and key not in SECRET_SETTINGS
)


def example(key: str) -> str:
    return EXAMPLES.get(key) or declared_config()[key]["default"]


def test_every_string_key_has_an_example():
    assert all(example(key) for key in STRING_KEYS)


@pytest.mark.parametrize("key", STRING_KEYS)
def test_each_example_is_accepted(key):
    load_stack_config({key: example(key)})


@pytest.mark.parametrize("key", STRING_KEYS)
def test_a_trailing_newline_is_refused_for_every_string_key(key):
    """Python's `re` docs: "$ Matches the end of the string or just before the newline at the end of the
    string", `\\Z` "only at the end of the string" (https://docs.python.org/3/library/re.html)."""
    value = example(key) + "\n"
    problems = rejection({key: value}).problems
    assert any(problem.startswith(f"{key}={value!r} is invalid") for problem in problems), problems


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("adminPrincipalArns", ["arn:aws:iam::123456789012:role/platform-admins\n"]),
        ("aws:region", "sa-east-1\n"),
    ],
)
def test_a_trailing_newline_is_refused_in_list_items_and_provider_keys(key, value):
    problems = rejection({key: value}).problems
    assert any(problem.startswith(key) and "invalid" in problem for problem in problems), problems


# --- names that collide with what the cluster already has ---


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "default", "kube-inference"])
def test_a_namespace_every_cluster_has_or_kubernetes_reserves_is_refused(namespace):
    """Kubernetes starts every cluster with default, kube-node-lease, kube-public and kube-system, and "Avoid
    creating namespaces with the prefix kube-, since it is reserved for Kubernetes system namespaces"
    (https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/). The program creates the
    namespace and deletes it on destroy."""
    (problem,) = rejection({"namespace": namespace}).problems
    assert problem.startswith(f"namespace={namespace!r} is invalid: every cluster already has it")


def test_the_kuberay_operators_namespace_is_refused():
    (problem,) = rejection({"namespace": "kuberay-system"}).problems
    assert problem.startswith("namespace='kuberay-system' is invalid: it is the KubeRay operator's")


def test_a_gpu_node_group_named_like_the_system_group_is_refused():
    """EKS CreateNodegroup `nodegroupName`: "The unique name to give your node group"
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html)."""
    (problem,) = rejection({"gpuNodegroupName": "system"}).problems
    assert problem.startswith("gpuNodegroupName='system' is invalid: it is the system node group's name")


# --- documented limits ---


def test_autoscaling_on_a_capacity_block_is_refused():
    """A Capacity Block reserves a fixed number of instances for a fixed window; instances beyond it cannot
    launch into it (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html: "Launching an
    instance into a Capacity Block reduces the available capacity by the number of instances launched")."""
    overrides = {
        "gpuCapacityType": "capacity-block",
        "capacityReservationId": "cr-02168da1478b509e0",
        "gpuAz": "sa-east-1a",
        **SERVE_AUTOSCALING,
    }
    (problem,) = rejection(overrides).problems
    assert problem.startswith("serveAutoscaling=true is invalid with gpuCapacityType='capacity-block'")


# --- messages that say which rule a value breaks ---


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("namespace", "a" * 64, "1-63 characters"),
        ("namespace", "-inference", "starting and ending with a letter or digit"),
        ("namespace", "inference-", "starting and ending with a letter or digit"),
        ("rayServiceName", "r" * 41, "1-40 characters"),
        ("rayServiceName", "1ray", "starting with a letter"),
    ],
)
def test_a_dns_label_message_states_its_length_and_start_end_rules(key, value, rule):
    """RFC 1123 DNS labels as Kubernetes validates names (at most 63 characters, alphanumeric start and end:
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names)."""
    (problem,) = rejection({key: value}).problems
    assert problem.startswith(f"{key}={value!r} is invalid")
    assert rule in problem


# --- provider settings: the name is checked, and so is the value ---


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("aws:skipMetadataApiCheck", "yes", "the aws provider reads a boolean; allowed is true or false"),
        ("aws:useFipsEndpoint", "on", "the aws provider reads a boolean; allowed is true or false"),
        ("aws:maxRetries", "three", "the aws provider reads an integer"),
        ("aws:defaultTags", '{"tag": {"team": "ml"}}', "does not read 'tag' (did you mean 'tags'?)"),
        ("aws:defaultTags", '{"tags": {"team": 1}}', 'allowed is {"tags": {"<key>": "<value>", ...}}'),
        ("aws:defaultTags", "team=ml", "allowed is a JSON object of tags"),
        ("aws:ignoreTags", '["team"]', "allowed is a JSON object of keyPrefixes, keys"),
        ("aws:assumeRoles", '{"roleArn": "arn:aws:iam::123456789012:role/x"}', "allowed is a JSON list of objects"),
    ],
)
def test_aws_provider_settings_take_the_type_the_provider_reads(key, value, allowed):
    """pulumi-aws `config/vars.py` reads each setting with `__config__.get_bool`, `get_int` or `get` (objects as
    JSON, typed by `config/outputs.py`: DefaultTags has `tags`, a map of strings); `ProviderArgs` (provider.py)
    types `assumeRoles` and `endpoints` as lists. pulumi/pulumi `sdk/python/lib/pulumi/config.py` `get_bool`
    raises ConfigTypeError for anything but true/True/false/False; the program asks for the lower-case form
    its own booleans take."""
    (problem,) = rejection({key: value}).problems
    assert problem.startswith(f"{key}={value!r} is invalid")
    assert allowed in problem


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("aws:skipMetadataApiCheck", "true"),
        ("aws:maxRetries", "5"),
        ("aws:defaultTags", '{"tags": {"team": "ml"}}'),
        ("aws:assumeRoles", '[{"roleArn": "arn:aws:iam::123456789012:role/x"}]'),
    ],
)
def test_well_typed_aws_provider_settings_are_accepted(key, value):
    load_stack_config({key: value})


# --- the default model's measured limits (infra/settings/config.py KNOWN_MODELS, lab/records/gpu-end-to-end.md) ---


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"kvBufferDevice": "cpu"}, id="pinned-cpu"),
        # g5 and g4dn have EFA without RDMA read, where auto takes host memory.
        pytest.param({"gpuNodeType": "g5.8xlarge"}, id="auto-on-g5"),
    ],
)
def test_host_memory_kv_staging_is_refused_for_the_hybrid_default_model(overrides):
    """vLLM 0.26's NIXL worker fails for a hybrid model in `initialize_host_xfer_buffer` ("'list' object has no
    attribute 'shape'": its KV caches are lists per Mamba state, lab/tests/test_smoke.py), which Pulumi.yaml's
    kvBufferDevice description states."""
    problems = rejection(overrides).problems
    assert any(p.startswith("kvBufferDevice=") and "the model is hybrid" in p for p in problems), problems


def test_the_default_models_weights_need_more_than_a_t4():
    """Its text weights alone took 16.80 GiB (vLLM "Model loading took 16.8 GiB memory", lab/records/gpu-end-to-end.md);
    a g4dn's T4 has 15360 MiB (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)."""
    problems = rejection({"gpuNodeType": "g4dn.8xlarge", "kvBufferDevice": "cuda"}).problems
    assert problems == [
        "gpuNodeType='g4dn.8xlarge' is invalid with modelSource='Qwen/Qwen3.5-9B' and tensorParallelSize=1: a replica "
        "gets 15360 MiB of GPU memory, less than the model's 16.8 GiB of weights; allowed is a larger GPU or a "
        "larger tensorParallelSize"
    ]


def test_the_default_models_vision_tower_is_refused_on_an_l4():
    """Measured: with the vision tower on an L4's 22888 MiB, "Available KV cache memory: -0.07 GiB" and "No
    available memory for the cache blocks" (lab/records/gpu-end-to-end.md, session B)."""
    (problem,) = rejection({"languageModelOnly": False}).problems
    assert problem.startswith("languageModelOnly=false is invalid with modelSource='Qwen/Qwen3.5-9B' on 22888 MiB")


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"languageModelOnly": False, "gpuNodeType": "g6e.12xlarge"}, id="vision-on-l40s"),
        pytest.param(
            {"languageModelOnly": False, "gpuNodeType": "g6.12xlarge", "tensorParallelSize": 2}, id="vision-on-2-l4s"
        ),
        pytest.param(
            {"gpuNodeType": "g4dn.8xlarge", "modelSource": "meta-llama/Llama-3.2-1B-Instruct"}, id="other-model"
        ),
    ],
)
def test_settings_the_measurements_do_not_rule_out_are_accepted(overrides):
    load_stack_config(overrides)


@pytest.mark.parametrize("instance_type", ["g6.8xlarge", "p5.48xlarge", "g6.xlarge"])
def test_a_gpu_type_as_the_system_node_type_is_refused(instance_type):
    """EC2's DescribeInstanceTypes reports its NVIDIA GPUs; the system group's AMI type AL2023_x86_64_STANDARD has no
    NVIDIA driver, AL2023_x86_64_NVIDIA does (https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html,
    amiType)."""
    (problem,) = rejection({"systemNodeType": instance_type}).problems
    assert problem.startswith(f"systemNodeType={instance_type!r} is invalid: it has")
    assert "NVIDIA GPU(s)" in problem


def test_an_arm64_type_as_the_system_node_type_is_refused_as_ec2_describes_it():
    """The system group's AMI type is AL2023_x86_64_STANDARD (infra/nodes/node_groups.py; amiType,
    https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html); EC2's DescribeInstanceTypes lists a
    Graviton type's ProcessorInfo.SupportedArchitectures as arm64 only (the offline answer,
    tools/instance_type_facts.py, in pulumi-aws's `supported_architectures`)."""
    (problem,) = rejection({"systemNodeType": "m7g.xlarge"}).problems
    assert problem.startswith(
        "systemNodeType='m7g.xlarge' is invalid: EC2 lists its architectures as arm64, and the node group's EKS AMI is "
        "x86_64 (EC2's answer, asked before any resource)"
    )
    assert "allowed is an x86_64 instance type" in problem


def test_an_arm64_type_as_the_gpu_node_type_is_refused_as_ec2_describes_it(monkeypatch):
    """The GPU group's AMI type is AL2023_x86_64_NVIDIA: a type EC2 describes with NVIDIA GPUs and EFA but arm64
    processors (p6e-gb200's Grace) cannot boot it. The offline table holds no such type, so one is answered here."""
    arm64_gpu = InstanceTypeFacts(96, 1179648, 8, "A100", 40960, 4, 4, "4x 100 Gigabit", "arm64")
    monkeypatch.setitem(INSTANCE_TYPES, "p9g.24xlarge", arm64_gpu)
    (problem,) = rejection({"gpuNodeType": "p9g.24xlarge"}).problems
    assert problem.startswith(
        "gpuNodeType='p9g.24xlarge' is invalid: EC2 lists its architectures as arm64, and the node group's EKS AMI is "
        "x86_64"
    )


@pytest.mark.parametrize("node_type", ["cache.t4g.huge", "cache.t2.micro", "cache.m7g.24xlarge", "cache.x9.large"])
def test_an_elasticache_node_type_that_cannot_be_created_is_refused_naming_the_table(node_type):
    """No pulumi-aws 7.51.1 invoke lists ElastiCache node types, so the stack's table decides, and says so."""
    (problem,) = rejection({"gcsRedisNodeType": node_type}).problems
    assert problem.startswith(f"gcsRedisNodeType={node_type!r} is invalid: it is not among the current-generation")
    assert "ELASTICACHE_NODE_TYPES" in problem and "no lookup lists them" in problem


def test_the_elasticache_table_is_the_api_references_current_generation_without_t2():
    """ElastiCache's API reference, CacheNode (the documentation botocore 1.44.8 ships with the ElastiCache model,
    https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CacheNode.html): the node types under each
    "Current generation", less T2, which CacheNodes.SupportedTypes.html moved to the previous generation (no new
    clusters on T2 instances)."""
    import botocore.session

    from infra.settings.kinds import ELASTICACHE_NODE_TYPES

    model = botocore.session.get_session().get_service_model("elasticache")
    documentation = model.shape_for("CacheNode").documentation
    current = re.findall(r"Current generation:(.*?)(?:Previous generation|$)", documentation, re.S)
    listed = {name for part in current for name in re.findall(r"cache\.[a-z0-9]+\.[a-z0-9]+", part)}
    assert listed - {name for name in listed if name.startswith("cache.t2.")} == ELASTICACHE_NODE_TYPES


# --- a namespace the stack creates for another of its parts ---


def created_namespaces(run: StackRun) -> set[str]:
    """Every namespace the run creates or installs into: Namespace objects and the Helm releases' namespaces."""
    return {r.inputs["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:Namespace")} | {
        r.inputs["namespace"] for r in run.of_type("kubernetes:helm.sh/v3:Release")
    }


def test_every_namespace_the_stack_creates_is_refused_as_the_rayservice_namespace():
    """With every part on (dev's observability and model cache, autoscaling's Cluster Autoscaler), each namespace
    the program declares or installs a chart into, but the RayService's own, is refused as `namespace`: a
    Namespace object's name is unique in the cluster, so a second create of it fails ("Each object in your cluster
    has a Name that is unique for that type of resource",
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names/), and deleting a namespace deletes
    everything in it ("This deletes everything under the namespace!",
    https://kubernetes.io/docs/tasks/administer-cluster/namespaces/#deleting-a-namespace)."""
    others = created_namespaces(run_stack(SERVE_AUTOSCALING)) - {"inference"}
    assert {"kuberay-system", "monitoring", "model-cache", "kube-system"} <= others
    for namespace in sorted(others):
        problems = rejection({**SERVE_AUTOSCALING, "namespace": namespace}).problems
        assert [p for p in problems if p.startswith(f"namespace={namespace!r} is invalid")], (namespace, problems)


@pytest.mark.parametrize(
    ("namespace", "owner"),
    [
        ("monitoring", "it is the metrics stack's (observability: the kube-prometheus-stack and dcgm-exporter"),
        ("model-cache", "it is the model cache's (modelCache with a Hugging Face modelSource: the mirror Job's"),
    ],
)
def test_a_namespace_of_another_part_names_that_part_and_what_is_allowed(namespace, owner):
    (problem,) = rejection({"namespace": namespace}).problems
    assert problem.startswith(f"namespace={namespace!r} is invalid: {owner}")
    assert problem.endswith("allowed is a namespace of its own such as 'inference'")


def test_the_metrics_namespace_is_refused_with_observability_off():
    """Turning observability on later would then create it a second time, mid-deploy."""
    (problem,) = rejection({"namespace": "monitoring", "observability": False}).problems
    assert problem.startswith("namespace='monitoring' is invalid: it is the metrics stack's")


# --- integers: only the number's own text ---


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("maxModelLen", "4_096", 4096),
        ("prefillReplicas", "+1", 1),
        ("maxAzs", " 3", 3),
        ("maxAzs", "3\n", 3),
        ("gpuRootVolumeGiB", "0200", 200),
        ("decodeMaxNumSeqs", "\u0663\u0662", 32),  # Arabic-Indic digits
        ("prefillMaxNumSeqs", "00", 0),
    ],
)
def test_an_integer_in_a_form_python_reads_but_is_not_its_own_text_is_refused(key, raw, value):
    """The reader takes int(), as pulumi.Config.get_int does (pulumi 3.272 `pulumi/config.py` `_get_int`:
    `return int(v)`), and int() allows whitespace around the number, a sign, '_' between digits and any Unicode
    decimal digit (https://docs.python.org/3/library/functions.html#int). Such a text would reach the plan and the
    rollout's record of settings as typed, and the same text is another number to the CLI in the stack file
    (tools/stack_yaml.py: Go's ParseInt with base 0 reads an unquoted 0200 as octal 128)."""
    (problem,) = rejection({key: raw}).problems
    assert problem.startswith(f"{key}={raw!r} is invalid: allowed is an integer in plain decimal digits, here {value}")


@pytest.mark.parametrize("raw", ["0x3", "3.0", "+9"])
def test_an_integer_int_refuses_or_out_of_bounds_is_reported_once_by_its_bounds(raw):
    (problem,) = rejection({"maxAzs": raw}).problems
    assert problem.startswith(f"maxAzs={raw!r} is invalid: allowed is an integer from 2 to 7")


def test_integers_in_plain_decimal_digits_are_taken_as_numbers():
    cfg = load_stack_config({"maxModelLen": "4096", "prefillMaxNumSeqs": "0", "maxAzs": "2"})
    assert (cfg.max_model_len, cfg.prefill.max_num_seqs, cfg.max_azs) == (4096, None, 2)


# --- warned, not refused: values that change nothing the stack declares ---


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the program passes to pulumi.log.warn, which `pulumi preview` shows as a warning."""
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: said.append(message))
    return said


@pytest.mark.parametrize("key", ["apiPublicAccessCidrs", "serveSourceCidrs"])
def test_a_cidr_inside_another_of_its_list_is_warned_naming_both(key, warnings):
    """Two CIDR prefixes either share no address or one holds the other (a prefix is one aligned block, RFC 4632
    section 3.1), and each list admits the union of its ranges: EKS's publicAccessCidrs are "The CIDR blocks that
    are allowed access" (https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigRequest.html), a
    Service's loadBalancerSourceRanges "the specified client IPs"
    (https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/). The inner range admits
    nothing more: harmless, so warned; it is taken as given."""
    cidrs = ["100.24.10.0/24", "100.25.0.0/16", "100.24.0.0/16"]
    cfg = load_stack_config({key: cidrs})
    assert getattr(cfg, ALLOW_LIST_FIELD[key]) == tuple(cidrs)
    (warning,) = [w for w in warnings if w.startswith(f"{key}[")]
    assert warning.startswith(f"{key}[0]='100.24.10.0/24' lies inside {key}[2]='100.24.0.0/16'")
    assert "allowed and meant is each range once, none inside another" in warning


def test_disjoint_cidrs_are_not_warned(warnings):
    load_stack_config({"apiPublicAccessCidrs": ["100.24.10.0/24", "100.24.11.0/24", "100.25.0.0/16"]})
    assert warnings == []


CERTIFICATE = OPERATOR_CERTIFICATE.format(region="sa-east-1")
# (overrides, the ignored key, the setting it acts under as the warning names it); dev has serveExposure none,
# observability and modelCache on, serveAutoscaling off, a validated kuberayVersion.
IGNORED = [
    pytest.param({"serveCertificateArn": CERTIFICATE}, "serveCertificateArn", "serveExposure='none'", id="cert"),
    pytest.param({"serveApiKeys": API_KEYS}, "serveApiKeys", "serveExposure='none'", id="keys"),
    pytest.param({"serveSourceCidrs": OPERATOR_CIDRS}, "serveSourceCidrs", "serveExposure='none'", id="sources"),
    pytest.param({"serveApiKeyAuth": False}, "serveApiKeyAuth", "serveExposure='none'", id="auth-off"),
    pytest.param(
        {"observability": False, "ttftP99ObjectiveMs": 500}, "ttftP99ObjectiveMs", "observability=false", id="ttft"
    ),
    pytest.param(
        {"observability": False, "kubePrometheusStackVersion": "88.0.0"},
        "kubePrometheusStackVersion",
        "observability=false",
        id="prometheus-chart",
    ),
    pytest.param(
        {"observability": False, "dcgmExporterVersion": "4.8.1"},
        "dcgmExporterVersion",
        "observability=false",
        id="dcgm-chart",
    ),
    pytest.param(
        {"observability": False, "runbookUrl": EXAMPLES["runbookUrl"]},
        "runbookUrl",
        "observability=false",
        id="runbook",
    ),
    pytest.param(
        {"clusterAutoscalerVersion": "9.58.0"}, "clusterAutoscalerVersion", "serveAutoscaling=false", id="ca-chart"
    ),
    pytest.param(
        {"modelCache": False, "modelCacheRetainOnDestroy": True},
        "modelCacheRetainOnDestroy",
        "modelCache=false",
        id="retain",
    ),
    pytest.param(
        {"allowUnvalidatedKuberayVersion": True},
        "allowUnvalidatedKuberayVersion",
        "kuberayVersion='1.7.0'",
        id="allow-unvalidated",
    ),
]


@pytest.mark.parametrize(("overrides", "key", "switch"), IGNORED)
def test_a_setting_the_chosen_mode_ignores_is_warned(overrides, key, switch, warnings):
    """infra/stack.py declares the serve load balancer only when serveExposure is not none (and the keys only with
    it: StackConfig.serve_api_key_auth), the metrics stack only with observability, the Cluster Autoscaler only
    with serveAutoscaling, the model cache's bucket only with modelCache (infra/preflight/checks.py
    mirrors_model); allowUnvalidatedKuberayVersion matters only for a version outside VALIDATED_KUBERAY_VERSIONS."""
    load_stack_config(overrides, secret_keys=EXPOSED_SECRET_KEYS)
    (warning,) = [w for w in warnings if w.startswith(f"{key}=")]
    assert f"is ignored with {switch}:" in warning
    assert "allowed and meant is" in warning
    if key in SECRET_SETTINGS:
        assert all(api_key not in warning for api_key in API_KEYS)


def what_is_declared(run: StackRun) -> list[tuple[str, str, str]]:
    """Each resource with its inputs, but the rollout's record of every setting as read (`changes`), which holds
    the ignored value too."""
    return sorted(
        (r.type, r.name, json.dumps({k: v for k, v in r.inputs.items() if k != "changes"}, sort_keys=True, default=str))
        for r in run.resources
    )


@pytest.mark.parametrize(("overrides", "key", "switch"), IGNORED)
def test_a_warned_value_changes_nothing_the_stack_declares(overrides, key, switch):
    """What makes these a warning and not a refusal: the program declares the same resources with the value as
    without it."""
    before = run_stack({k: v for k, v in overrides.items() if k != key})
    # the same running stack, the value added: its objects keep the uids the API server gave them
    after = run_stack(overrides, secret_keys=EXPOSED_SECRET_KEYS, existing=before)
    assert what_is_declared(after) == what_is_declared(before)


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        pytest.param(
            {"observability": False, "ampWorkspaceUrl": EXAMPLES["ampWorkspaceUrl"]}, "ampWorkspaceUrl=", id="amp"
        ),
        pytest.param({"prefillMaxReplicas": 2}, "prefillMaxReplicas=2, prefillTargetOngoingRequests=0", id="max"),
        pytest.param(
            {"observability": False, "alertSnsTopicArn": EXAMPLES["alertSnsTopicArn"]},
            "alertSnsTopicArn=",
            id="receiver",
        ),
    ],
)
def test_an_ignored_value_that_states_an_outcome_is_refused_not_warned(overrides, refused):
    """The other class, kept: a workspace that would receive no metrics, a side that would never scale, fail
    without a word where they are noticed, so they are refused."""
    (problem,) = rejection(overrides).problems
    assert problem.startswith(refused)


# --- values a real deploy would fail on only after the VPC and cluster exist ---


@pytest.mark.parametrize(("side", "seqs", "tokens"), [("prefill", 32, 16), ("decode", 32, 31), ("decode", 512, 256)])
def test_a_batch_of_fewer_tokens_than_sequences_is_refused(side, seqs, tokens):
    """vLLM 0.26.0 (the version ray[llm]==2.58.0 pins), `vllm/config/scheduler.py`
    `SchedulerConfig.verify_max_model_len`: `if self.max_num_batched_tokens < self.max_num_seqs: raise ValueError(...)`
    at engine start."""
    (problem,) = rejection({f"{side}MaxNumSeqs": seqs, f"{side}MaxNumBatchedTokens": tokens}).problems
    assert problem.startswith(f"{side}MaxNumBatchedTokens={tokens} is invalid with {side}MaxNumSeqs={seqs}: vLLM")
    assert f"allowed is at least {seqs}, or 0 for vLLM's default" in problem


@pytest.mark.parametrize(
    ("seqs", "tokens"),
    [
        (32, 32),  # equal: vLLM's check is `<`
        (32, 0),  # tokens left to vLLM: its default is min(seqs x max_model_len, 2048 or more), never below 32
        (0, 16),  # seqs left to vLLM: arg_utils caps the default max_num_seqs at max_num_batched_tokens
        (32, 1024),  # below maxModelLen 4096: refused by vLLM only with chunked prefill off, which it turns on
    ],
)
def test_a_batch_vllm_takes_is_accepted(seqs, tokens):
    """vLLM 0.26.0 `vllm/engine/arg_utils.py` `_set_default_max_num_seqs_and_batched_tokens_args` and
    `_set_default_chunked_prefill_and_prefix_caching_args` (chunked prefill defaults to the model's support)."""
    cfg = load_stack_config({"prefillMaxNumSeqs": seqs, "prefillMaxNumBatchedTokens": tokens})
    assert (cfg.prefill.max_num_seqs, cfg.prefill.max_num_batched_tokens) == (seqs or None, tokens or None)


@pytest.mark.parametrize(
    "source",
    [
        "https://huggingface.co/Qwen/Qwen3.5-9B",
        "S3://example-models/qwen3.5-9b",
        "gs://example-models/qwen3.5-9b",
        "Qwen/Qwen3.5-9B/",
        "hf://Qwen/Qwen3.5-9B",
        "Qwen--Qwen3.5-9B/x",
        "Qwen3.5-9B",
    ],
)
@pytest.mark.parametrize("preflight", [True, False])
def test_a_model_source_in_no_form_the_engines_load_is_refused_naming_the_forms(source, preflight):
    """Before any resource, with the model preflight off too (it would otherwise reach the serve config verbatim, and
    with the preflight on it got "set hfToken")."""
    (problem,) = rejection({"modelSource": source, "modelPreflight": preflight}).problems
    assert problem.startswith(f"modelSource={source!r} is invalid: allowed is a Hugging Face repo id owner/name")
    assert "s3://<bucket>/<prefix>" in problem and "absolute path inside the image" in problem
    assert "hfToken" not in problem


@pytest.mark.parametrize(
    "repo",
    [
        "Qwen/Qwen3.5-9B",
        "meta-llama/Llama-3.1-8B",
        "a/b",
        "_x/y_",
        "Qwen/Qwen3.5-9B/",
        "Qwen/Qwen3.5--9B",
        "a..b/c",
        "Qwen/model.git",
        "-a/b",
        "a/b-",
        "caf\u00e9/x",
        "a" * 97 + "/b",
        "a/b/c",
        "https://huggingface.co/a/b",
        "a b/c",
    ],
)
def test_the_repo_form_is_huggingface_hubs_owner_name_rule(repo):
    """huggingface_hub 1.33.0 (transformers 5.17's), `huggingface_hub/utils/_validators.py` `validate_repo_id`: the
    stack takes a repo id where the Hub client does, with the owner the stack's cache prefix needs."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    from infra.settings.model_sources import is_hub_repo

    try:
        validate_repo_id(repo)
        hub_takes = "/" in repo
    except HFValidationError:
        hub_takes = False
    assert is_hub_repo(repo) == hub_takes


@pytest.mark.parametrize(
    "bucket",
    [
        "My_Bucket",
        "ab",
        "a" * 64,
        "-models",
        "models-",
        "my..models",
        "192.168.5.4",
        "xn--models",
        "sthree-models",
        "amzn-s3-demo-models",
        "models-s3alias",
        "models--ol-s3",
        "models.mrap",
        "models--x-s3",
        "models--table-s3",
    ],
)
def test_an_s3_model_source_names_a_bucket_s3_can_have(bucket):
    """S3's general purpose bucket naming rules (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
    bucketnamingrules.html): 3-63 characters of lower-case letters, digits, '.' and '-', a letter or digit at either
    end, no '..', not an IP address, not the reserved prefixes xn--, sthree-, amzn-s3-demo- nor the suffixes -s3alias,
    --ol-s3, .mrap, --x-s3, --table-s3."""
    (problem,) = rejection({"modelSource": f"s3://{bucket}/qwen", "modelPreflight": False}).problems
    assert problem.startswith(f"modelSource='s3://{bucket}/qwen' is invalid: bucket {bucket!r} breaks S3's bucket")


@pytest.mark.parametrize("source", ["s3://", "s3://example-models", "s3://example-models/"])
def test_an_s3_model_source_without_a_prefix_is_refused_before_any_resource(source):
    """The workers' role may read the model's prefix only (infra/serving/model_cache.py); a bare `s3://` was refused
    by the ModelCache component only after 39 resources were declared. `rejection` asserts none was."""
    (problem,) = rejection({"modelSource": source, "modelPreflight": False}).problems
    assert problem.startswith(f"modelSource={source!r} is invalid")


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        ("alertSnsTopicArn", "arn:aws-cn:sns:cn-north-1:123456789012:alerts", "partition 'aws-cn'"),
        ("alertSnsTopicArn", "arn:aws:sns:us-gov-west-1:123456789012:alerts", "region 'us-gov-west-1'"),
        ("alertSnsTopicArn", "arn:aws-us-gov:sns:us-gov-west-1:123456789012:alerts", "partition 'aws-us-gov'"),
        (
            "ampWorkspaceUrl",
            "https://aps-workspaces.cn-north-1.amazonaws.com.cn/workspaces/ws-0123-abcd/",
            "partition 'aws-cn'",
        ),
        ("ampWorkspaceUrl", "https://aps-workspaces.us-gov-west-1.amazonaws.com/workspaces/ws-0123/", "region"),
    ],
)
def test_a_receiver_in_another_partition_is_refused(key, value, where):
    """An ARN's second field is its partition, and the partitions (aws, aws-cn, aws-us-gov) keep their own
    credentials (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html); a GovCloud region is in
    aws-us-gov, a China region's endpoints under amazonaws.com.cn. The stack deploys into partition aws only."""
    (problem,) = rejection({key: value, "observability": True}).problems
    assert problem.startswith(f"{key}={value!r} is invalid: it is in {where}")
    assert "allowed is" in problem and "in a region of partition 'aws'" in problem


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("alertSnsTopicArn", "arn:aws:sns:eu-west-1:123456789012:alerts"),
        ("ampWorkspaceUrl", "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123-abcd/"),
    ],
)
def test_a_receiver_in_another_region_of_the_partition_is_accepted(key, value):
    """SNS and AMP take signed requests from anywhere in the partition; the stack signs for the topic's and the
    workspace's own region (infra/observability/receivers.py, remote_write)."""
    cfg = load_stack_config({key: value, "observability": True})
    assert cfg.settings[key] == value


def test_an_integer_out_of_bounds_hints_at_a_yaml_octal_reading():
    """The CLI decodes the stack file with go-yaml v3, which reads a plain scalar with Go's strconv.ParseInt(s, 0, 64)
    (go-yaml/yaml v3 resolve.go): `maxAzs: 010` arrives as '8' (tools/stack_yaml.py reads it so)."""
    (problem,) = rejection({"maxAzs": "8"}).problems
    assert problem.startswith("maxAzs='8' is invalid: allowed is an integer from 2 to 7")
    assert "if the stack file says `maxAzs: 010`, the Pulumi CLI read that as octal 8" in problem
    assert problem.endswith("write 10 without the 0")
