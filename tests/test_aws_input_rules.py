"""Every AWS property the program sets meets the rule AWS enforces on it (policy/ray_llm_policies/aws_input_rules.py,
the rules in aws_rules.py).

The offline mocks take any string, so a description with an apostrophe passed every other test while EC2 refused it
in `pulumi up` (issue 49). Here every AWS resource of every shipped stack, of a stack with every feature on, of a
Capacity Block stack and of one with the longest names the config accepts is walked against the table, with the names
pulumi-aws would generate; a property the table neither checks nor explains fails too, so a new resource or input
cannot slip past. docs/aws-input-rules.md lists the rules and their sources.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import pytest

from infra.settings.regions import SUPPORTED_REGIONS
from policy.ray_llm_policies import aws_input_rules as table
from policy.ray_llm_policies import aws_rules
from tests.conftest import (
    EXPOSED_SECRET_KEYS,
    NEW_CLUSTER,
    OPERATOR_CERTIFICATE,
    SERVE_AUTOSCALING,
    exposed,
    shipped_run,
)
from tests.eks_expansion import CLUSTER, MANAGED_NODE_GROUP, build, expand, missing_toolchain, runner_request
from tools.aws_rules_reference import BEGIN_MARKER, END_MARKER, REFERENCE_PAGE, WRITE_COMMAND, markdown_table
from tools.offline import StackRun, run_stack
from tools.project import SHIPPED_STACKS

# Every optional AWS feature on at once: the endpoint on an internet-facing NLB, Serve autoscaling (the Cluster
# Autoscaler's role), KubeRay's NewCluster upgrade, remote write to AMP and alerts to SNS (their IRSA roles), prefix
# routing, a NAT gateway per AZ, protection and an admin access entry. headFaultTolerance redis and the model cache
# are on by default.
EVERY_FEATURE = {
    **exposed("internet-facing"),
    **SERVE_AUTOSCALING,
    **NEW_CLUSTER,
    "ampWorkspaceUrl": "https://aps-workspaces.sa-east-1.amazonaws.com/workspaces/ws-1a2b3c4d/",
    "alertSnsTopicArn": "arn:aws:sns:sa-east-1:123456789012:ray-llm-alerts",
    "prefixAwareRouting": True,
    "prefixCaching": "on",
    "natGatewayPerAz": True,
    "protectResources": True,
    "adminPrincipalArns": ["arn:aws:iam::123456789012:role/platform-admins"],
}
# GPU nodes in a Capacity Block: the launch template's market options and reservation target (the offline account's
# block, which the preflight looks up: tools/offline_aws.py CAPACITY_BLOCKS).
CAPACITY_BLOCK = {
    "gpuCapacityType": "capacity-block",
    "capacityReservationId": "cr-02168da1478b509e0",
    "gpuAz": "sa-east-1a",
    "gpuNodeType": "p5.48xlarge",
}
# The longest value each name-like key accepts (infra/settings/table.py), in the supported region with the longest
# name: what a derived AWS name or tag can reach.
LONGEST_REGION = max(SUPPORTED_REGIONS, key=len)
LONGEST_NAMES = {
    **EVERY_FEATURE,
    "aws:region": LONGEST_REGION,
    "serveCertificateArn": OPERATOR_CERTIFICATE.format(region=LONGEST_REGION),
    "ampWorkspaceUrl": f"https://aps-workspaces.{LONGEST_REGION}.amazonaws.com/workspaces/ws-1a2b3c4d/",
    "alertSnsTopicArn": f"arn:aws:sns:{LONGEST_REGION}:123456789012:ray-llm-alerts",
    "clusterName": "C" * 100,
    "gpuNodegroupName": "g" * 63,
    "rayServiceName": "r" * 40,
    "namespace": "n" * 63,
    "owner": "o" * 256,
    "costCenter": "c" * 256,
}
# A stack name as long as Pulumi takes, which the stack tag carries: "stack names are limited to 100 characters"
# (pulumi/pulumi pkg/backend/diy, ParseReference).
LONG_STACK = "s" * 100
VARIANTS = {
    "every-feature": ({**EVERY_FEATURE}, "dev"),
    "capacity-block": ({**CAPACITY_BLOCK}, "dev"),
    "longest-names": ({**LONGEST_NAMES}, LONG_STACK),
    "features-off": ({"headFaultTolerance": "off", "modelCache": False, "observability": False}, "dev"),
}
RUNS = [*(f"stack-{stack}" for stack in SHIPPED_STACKS), *VARIANTS]


@functools.cache
def stack_run(run: str) -> StackRun:
    if run.startswith("stack-"):
        return shipped_run(run.removeprefix("stack-"))
    overrides, stack = VARIANTS[run]
    return run_stack(overrides, stack=stack, secret_keys=EXPOSED_SECRET_KEYS)


class Declared(Protocol):
    """A resource the program declares (tools.offline.Resource) or pulumi-eks does (tests.eks_expansion.Child)."""

    type: str
    name: str
    inputs: dict[str, Any]


@functools.cache
def expanded(run: str) -> tuple[Declared, ...]:
    """The AWS resources pulumi-eks's own code makes of the run's components (tests/eks_expansion.py)."""
    missing = missing_toolchain()
    if missing and os.environ.get("CI") == "true":
        raise RuntimeError(f"CI must walk pulumi-eks's children: {missing}")
    if missing:
        pytest.skip(missing)
    build()
    declared = stack_run(run)
    expansion = expand(runner_request(declared, declared.outputs["region"]))
    assert expansion.errors == ()
    return tuple(child for child in expansion.resources if child.type.startswith("aws:"))


def aws_resources(run: str) -> Iterator[Declared]:
    """The AWS resources the program declares, the pulumi-eks components it passes AWS inputs to, and the AWS
    resources pulumi-eks makes of them."""
    yield from (
        r for r in stack_run(run).resources if r.type.startswith("aws:") or r.type in (CLUSTER, MANAGED_NODE_GROUP)
    )
    yield from expanded(run)


# pulumi-aws's Check gives an autonamed property (table.AUTONAMED) the logical name, "-" and 7 random characters
# (pulumi/pulumi-terraform-bridge pkg/tfbridge AutoNameTransform: Separator "-", Randlen 7; pulumi/pulumi-aws
# provider/resources.go), the replication group's id lowercased.
AUTONAME_SUFFIX = "-" + "0a1b2c3"


def autonamed(type_: str, logical_name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as pulumi-aws's Check completes them: an autonamed property the program left out gets its name."""
    prop = table.AUTONAMED.get(type_)
    if prop is None or prop in inputs:
        return dict(inputs)
    name = logical_name + AUTONAME_SUFFIX
    return {**inputs, prop: name.lower() if prop == "replicationGroupId" else name}


def unexplained(type_: str, inputs: Mapping[str, Any]) -> Iterator[str]:
    """The property paths of these inputs that the table neither rules nor explains."""
    known = {**table.RULES.get(type_, {}), **table.EXPLAINED.get(type_, {})}
    for path in sorted({path for path, _ in table.leaves(inputs)}):
        ancestors = [path[:index] for index, character in enumerate(path) if character == "."]
        if path not in known and not any(ancestor in known for ancestor in ancestors):
            yield path


def completed_inputs(resource: Declared) -> dict:
    return autonamed(resource.type, resource.name, resource.inputs)


@pytest.mark.parametrize("run", RUNS)
def test_every_aws_input_meets_its_rule(run):
    problems = [
        f"{resource.type} {resource.name!r}: {violation}"
        for resource in aws_resources(run)
        for violation in table.violations(resource.type, completed_inputs(resource))
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("run", RUNS)
def test_every_aws_input_is_ruled_or_explained(run):
    """A new resource type or input fails here until the table states its rule, or why it has none."""
    problems = [
        f"{resource.type} {resource.name!r}: "
        + ("type not in the table" if resource.type not in table.RULES else f"property {path} not in the table")
        for resource in aws_resources(run)
        for path in (
            ["*"] if resource.type not in table.RULES else unexplained(resource.type, completed_inputs(resource))
        )
    ]
    assert not problems, "\n".join(problems)


def test_the_variants_declare_every_type_and_property_the_table_holds():
    """No stale rows: every type and property the table rules or explains is declared by some run."""
    declared = {
        (resource.type, path)
        for run in RUNS
        for resource in aws_resources(run)
        for path, _ in table.leaves(completed_inputs(resource))
    }
    held = {(type_, path) for rows in (table.RULES, table.EXPLAINED) for type_, paths in rows.items() for path in paths}
    assert {type_ for type_, _ in declared} == set(table.RULES)
    stale = sorted(held - declared)
    assert not stale, "\n".join(f"{type_} {path}" for type_, path in stale)


RULES = sorted({rule for rules in table.RULES.values() for rule in rules.values()}, key=lambda rule: rule.name)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_each_rule_refuses_the_value_its_source_refuses(rule):
    assert rule.refusal(rule.refused_example) is not None


def test_the_security_group_rule_refuses_the_apostrophe_of_terraform_provider_aws_18874():
    """hashicorp/terraform-provider-aws#18874: an inline rule description with an apostrophe fails validation."""
    refusal = aws_rules.SECURITY_GROUP_RULE_DESCRIPTION.refusal("the Ray head's GCS")
    assert refusal is not None and "does not match" in refusal


def test_an_autonamed_property_is_the_logical_name_and_seven_characters():
    """pulumi-terraform-bridge AutoNameTransform: Separator "-", Randlen 7; the replication group id lowercased."""
    completed = autonamed("aws:elasticache/replicationGroup:ReplicationGroup", "GCS-store-valkey", {})
    assert completed == {"replicationGroupId": "gcs-store-valkey-0a1b2c3"}
    assert autonamed("aws:iam/role:Role", "reader", {"name": "given"}) == {"name": "given"}


def test_a_tag_key_with_the_reserved_aws_prefix_is_refused():
    assert aws_rules.TAG_KEY.refusal("aws:owner") is not None
    assert aws_rules.TAG_KEY.refusal("kubernetes.io/cluster/ray-llm-multinode") is None


def test_the_rules_page_is_generated_from_the_table():
    page = REFERENCE_PAGE.read_text()
    if page[page.index(BEGIN_MARKER) : page.index(END_MARKER) + len(END_MARKER)] != markdown_table():
        pytest.fail(f"docs/aws-input-rules.md's rules table is stale: run {WRITE_COMMAND}", pytrace=False)
