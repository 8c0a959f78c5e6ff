"""Offline render of a stack: what `pulumi up` would declare, as files a person or GitOps can use.

    python -m tools.render --stack dev --out build/dev [--config KEY=VALUE ...] [--secret KEY=VALUE ...]

The stack is evaluated by `tools.offline.run_stack`, the same mock run the tests check, and the files (plan.md,
manifests/, serve-config.yaml, helm/) are taken from the resources it captured, so nothing here can drift from the
program. Secrets never reach a file; a stack with no API allow-list renders on a marked placeholder; a refusal that
rests on an offline table names the live lookup that decides (docs/operations.md#render-review-a-change-offline).
Exit status: 0 rendered, 1 invalid configuration (the message names every bad key), 2 bad usage."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.settings.kinds import API_ALLOW_LIST_COMMAND
from infra.settings.reader import SECRET_SETTINGS
from infra.settings.rules_network import OFFLINE_ALLOW_LIST_OPTION
from infra.settings.stack_config import ConfigError
from tools.offline import (
    ALLOW_LIST_PLACEHOLDER,
    EngineMessage,
    Resource,
    StackFileError,
    StackRun,
    project_config,
    run_stack,
    stack_file,
)
from tools.offline_aws import OFFLINE_PLACEHOLDERS, OfflineNote
from tools.project import PROJECT, SHIPPED_STACKS, key_value_pairs

REDACTED = "<redacted>"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"
# Objects of these types are the stack's plumbing, not something to apply to a cluster.
NOT_MANIFESTS = frozenset({HELM_RELEASE, "pulumi:providers:kubernetes"})
# `kubectl apply -f manifests/` goes in file-name order: the namespaces first, the service accounts before the pods
# that run as them, the model mirror's Job before the RayService (kubectl does not wait for it: `pulumi up` does),
# then the monitoring objects (their namespace and CRDs come with the kube-prometheus-stack release, installed
# before). The image pre-puller last: with kubectl the nodes are there already, so it only keeps the image on them.
APPLY_ORDER = (
    "Namespace",
    "NetworkPolicy",
    "Secret",
    "ServiceAccount",
    "Service",
    "Job",
    "RayService",
    "ConfigMap",
    "PodMonitor",
    "PrometheusRule",
    "DaemonSet",
)
# Secret values shorter than this are too likely to occur by chance to search for.
MIN_SEARCHED_SECRET_LENGTH = 4
RENDERED_LIST = ".rendered-files"
# The API allow-list has no default and `pulumi up` refuses to run without one; an offline render deploys nothing,
# so where neither the stack file nor --config gives one it renders with a marked placeholder and says so.
ALLOW_LIST_SETTING = "apiPublicAccessCidrs"
PLACEHOLDER_SOURCE = "placeholder: unset, `pulumi up` refuses"
# --config's example in the help (a value the check accepts: tests/test_render.py).
CONFIG_EXAMPLE = 'serveSourceCidrs=["10.0.0.0/8"]'

# What a reviewer wants to see of each resource type: (label, path into its inputs). A path is
# dotted; `*` walks every item of a list or every value of a map.
KEY_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "aws:ec2/vpc:Vpc": (("CIDR", "cidrBlock"),),
    "aws:ec2/subnet:Subnet": (("AZ", "availabilityZone"), ("CIDR", "cidrBlock"), ("public IPs", "mapPublicIpOnLaunch")),
    "aws:ec2/eip:Eip": (("domain", "domain"),),
    "aws:ec2/natGateway:NatGateway": (("subnet", "subnetId"),),
    "aws:ec2/routeTable:RouteTable": (
        ("destination", "routes.*.cidrBlock"),
        ("internet gateway", "routes.*.gatewayId"),
        ("NAT gateway", "routes.*.natGatewayId"),
    ),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": (("subnet", "subnetId"), ("route table", "routeTableId")),
    "aws:ec2/securityGroup:SecurityGroup": (
        ("ingress protocol", "ingress.*.protocol"),
        ("ingress from itself", "ingress.*.self"),
        ("egress protocol", "egress.*.protocol"),
        ("egress to itself", "egress.*.self"),
    ),
    "aws:ec2/placementGroup:PlacementGroup": (("strategy", "strategy"),),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        ("instance type", "instanceType"),
        ("network interfaces", "networkInterfaces.*.interfaceType"),
        ("root GiB", "blockDeviceMappings.*.ebs.volumeSize"),
        ("root volume", "blockDeviceMappings.*.ebs.volumeType"),
        ("encrypted", "blockDeviceMappings.*.ebs.encrypted"),
        ("IMDS tokens", "metadataOptions.httpTokens"),
        ("placement group", "placement.groupName"),
        ("capacity reservation", "capacityReservationSpecification.capacityReservationTarget.capacityReservationId"),
    ),
    "aws:eks/addon:Addon": (("add-on", "addonName"), ("version", "addonVersion")),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": (("policy", "policyArn"),),
    "aws:kms/key:Key": (("rotation", "enableKeyRotation"), ("deletion window days", "deletionWindowInDays")),
    "eks:index:Cluster": (
        ("name", "name"),
        ("Kubernetes", "version"),
        ("public API CIDRs", "publicAccessCidrs"),
        ("private endpoint", "endpointPrivateAccess"),
        ("authentication", "authenticationMode"),
        ("admins", "accessEntries.*.principalArn"),
        ("control-plane logs", "enabledClusterLogTypes"),
        ("secrets KMS key", "encryptionConfigKeyArn"),
        ("vpc-cni", "vpcCniOptions.addonVersion"),
        ("kube-proxy", "kubeProxyAddonOptions.version"),
        ("deletion protection", "deletionProtection"),
    ),
    "eks:index:ManagedNodeGroup": (
        ("name", "nodeGroupName"),
        ("instance types", "instanceTypes"),
        ("nodes", "scalingConfig.desiredSize"),
        ("AMI", "amiType"),
        ("disk GiB", "diskSize"),
        ("subnets", "subnetIds"),
        ("labels", "labels"),
        ("taints", "taints.*.key"),
        ("launch template", "launchTemplate.id"),
    ),
    HELM_RELEASE: (
        ("chart", "chart"),
        ("version", "version"),
        ("namespace", "namespace"),
        ("repository", "repositoryOpts.repo"),
    ),
    "kubernetes:core/v1:Namespace": (("name", "metadata.name"),),
    "kubernetes:core/v1:Secret": (
        ("name", "metadata.name"),
        ("namespace", "metadata.namespace"),
        ("data", "stringData"),
    ),
    "kubernetes:core/v1:Service": (
        ("name", "metadata.name"),
        ("namespace", "metadata.namespace"),
        ("type", "spec.type"),
        ("ports", "spec.ports.*.port"),
        ("source CIDRs", "spec.loadBalancerSourceRanges"),
        ("annotations", "metadata.annotations"),
    ),
    RAYSERVICE: (
        ("name", "metadata.name"),
        ("namespace", "metadata.namespace"),
        ("Ray", "spec.rayClusterConfig.rayVersion"),
        ("image", "spec.rayClusterConfig.headGroupSpec.template.spec.containers.*.image"),
        ("head node selector", "spec.rayClusterConfig.headGroupSpec.template.spec.nodeSelector"),
        ("workers", "spec.rayClusterConfig.workerGroupSpecs.*.replicas"),
        ("worker resources", "spec.rayClusterConfig.workerGroupSpecs.*.template.spec.containers.*.resources.limits"),
    ),
}


@dataclass(frozen=True)
class RenderRequest:
    """What to evaluate: a stack, with `pulumi config set`-like overrides and assumed AZ offerings."""

    stack: str
    config: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    # AZs that offer the GPU type in the mock; None keeps run_stack's default (the region's a and b).
    gpu_offering_azs: list[str] | None = None


def _unqualified(key: str) -> str:
    return key.removeprefix(f"{PROJECT}:")


def placeholders(request: RenderRequest) -> dict[str, str]:
    """Settings the render stands in for: the API allow-list where neither the stack file nor --config sets it (a
    value the user gives, even `[]`, is used as given). Raises StackFileError for a stack file that cannot be read."""
    given = {*map(_unqualified, stack_file(request.stack).config), *map(_unqualified, request.config)}
    return {} if ALLOW_LIST_SETTING in given else {ALLOW_LIST_SETTING: json.dumps([ALLOW_LIST_PLACEHOLDER])}


def placeholder_note(code: str = "") -> str:
    """What the user is told when the allow-list is stood in for; `code` quotes the commands (a backtick for
    Markdown)."""
    return (
        f"{ALLOW_LIST_SETTING} unset: the render stands in the placeholder {ALLOW_LIST_PLACEHOLDER} (RFC 7526's "
        "deprecated 6to4 relay anycast prefix, no one's address); `pulumi up` refuses until you set yours: "
        f"{code}{API_ALLOW_LIST_COMMAND}{code} (or render with yours: {code}{OFFLINE_ALLOW_LIST_OPTION}{code})"
    )


def evaluate(request: RenderRequest) -> StackRun:
    """Runs the program under mocks with the request's config, placeholders first; raises ConfigError like
    `pulumi up`."""
    return run_stack(
        {**placeholders(request), **request.config, **request.secrets},
        stack=request.stack,
        secret_keys=tuple(request.secrets),
        gpu_offering_azs=request.gpu_offering_azs,
    )


# --- turning captured inputs into documents ---


def map_scalars(value: Any, transform: Callable[[Any], Any]) -> Any:
    """The same structure of dicts and lists, with every scalar passed through `transform`."""
    if isinstance(value, dict):
        return {key: map_scalars(item, transform) for key, item in value.items()}
    if isinstance(value, list):
        return [map_scalars(item, transform) for item in value]
    return transform(value)


def redacted(value: Any) -> Any:
    """The same shape with every scalar replaced, so a redacted object still validates."""
    return map_scalars(value, lambda _: REDACTED)


def plain_numbers(value: Any) -> Any:
    """Pulumi hands every number over as a float: `replicas: 2.0` would not be an integer to Kubernetes."""
    return map_scalars(value, lambda item: int(item) if isinstance(item, float) and item.is_integer() else item)


def declared_inputs(resource: Resource) -> dict[str, Any]:
    """A resource's inputs as they may be shown: integral numbers as integers, secret inputs redacted."""
    inputs = plain_numbers(resource.inputs)
    return {key: redacted(value) if key in resource.secret_inputs else value for key, value in inputs.items()}


class _ManifestDumper(yaml.SafeDumper):
    """Multi-line strings (the embedded serveConfigV2) as literal blocks, readable in a diff."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_ManifestDumper.add_representer(str, _represent_text)


def to_yaml(document: Any) -> str:
    # Sorted keys keep a render byte-for-byte stable between runs (Kubernetes prints objects so too).
    return yaml.dump(document, Dumper=_ManifestDumper, sort_keys=True, default_flow_style=False)


def manifest_path(manifest: dict[str, Any]) -> str:
    kind = manifest["kind"]
    order = APPLY_ORDER.index(kind) + 1 if kind in APPLY_ORDER else len(APPLY_ORDER) + 1
    return f"manifests/{order:02d}-{kind.lower()}-{manifest['metadata']['name']}.yaml"


def manifest_text(manifest: dict[str, Any]) -> str:
    text = to_yaml(manifest)
    if manifest["kind"] != "Secret":
        return text
    metadata = manifest["metadata"]
    keys = {**manifest.get("data", {}), **manifest.get("stringData", {})}
    literals = " ".join(f"--from-literal={key}=..." for key in keys)
    return (
        "# The values are redacted: create this Secret from the real ones instead of applying this file:\n"
        f"#   kubectl create secret generic {metadata['name']} -n {metadata['namespace']} {literals}\n{text}"
    )


def placeholder_header(text: str) -> str:
    """A comment naming each value of `text` that only the offline answers give (tools.offline
    OFFLINE_PLACEHOLDERS: the account id, the ElastiCache endpoint), or "" where there is none: what a GitOps user must
    replace before applying the file."""
    found: dict[str, str] = {}
    for marker, meaning in OFFLINE_PLACEHOLDERS:
        for value in re.findall(rf"[^\s'\"]*{re.escape(marker)}[^\s'\",]*", text):
            found.setdefault(value, meaning)
    if not found:
        return ""
    lines = [
        "# Offline placeholders: tools.render ran the program under Pulumi's mocks, and these values are the",
        "# mocks' answers, not your account's. Put the real ones in (`pulumi preview --diff` or the deployed",
        "# resources) before applying this file:",
        *(f"#   {value}  ({meaning})" for value, meaning in found.items()),
    ]
    return "\n".join(lines) + "\n"


def kubernetes_manifests(run: StackRun) -> list[dict[str, Any]]:
    """Every Kubernetes object the stack declares directly (Helm releases aside), in apply order."""
    manifests = [
        declared_inputs(resource)
        for resource in run.resources
        if resource.type.startswith("kubernetes:") and resource.type not in NOT_MANIFESTS
    ]
    return sorted(manifests, key=manifest_path)


def helm_values_files(run: StackRun) -> dict[str, str]:
    files = {}
    for resource in run.of_type(HELM_RELEASE):
        release = declared_inputs(resource)
        path = f"helm/{release['name']}.values.yaml"
        install = (
            f"helm upgrade --install {release['name']} {release['chart']} --repo {release['repositoryOpts']['repo']} "
            f"--version {release['version']} --namespace {release['namespace']} --create-namespace -f {path}"
        )
        header = f"# Values of the {release['name']} release ({release['chart']} {release['version']}):\n"
        files[path] = f"{header}#   {install}\n" + to_yaml(release.get("values") or {})
    return files


# --- the plan ---


def setting(value: Any, path: str) -> list[Any]:
    """The values at a KEY_SETTINGS path; missing keys give nothing."""
    found = [value]
    for key in path.split("."):
        step: list[Any] = []
        for node in found:
            if key == "*" and isinstance(node, (dict, list)):
                step.extend(node.values() if isinstance(node, dict) else node)
            elif isinstance(node, dict) and key in node:
                step.append(node[key])
        found = step
    return [item for item in found if item is not None]


def shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ", ".join(f"{key}={shown(item)}" for key, item in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(shown(item) for item in value)
    return str(value)


def key_settings(resource: Resource) -> str:
    inputs = declared_inputs(resource)
    parts = []
    for label, path in KEY_SETTINGS.get(resource.type, ()):
        values = setting(inputs, path)
        if not values:
            continue
        # Repeats (32 EFA interfaces of a p5) read better as a count.
        if len(values) > 1 and all(item == values[0] for item in values):
            parts.append(f"{label}: {shown(values[0])} x{len(values)}")
        else:
            parts.append(f"{label}: {shown(values)}")
    return "; ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "-"


def urn_heading(urn: str) -> str:
    """`name (type)` of a URN: urn:pulumi:STACK::PROJECT::PARENT-TYPE$TYPE::NAME."""
    _, _, qualified_type, name = urn.split("::", 3)
    return f"{name} ({qualified_type.rsplit('$', 1)[-1]})"


def config_rows(request: RenderRequest) -> list[tuple[str, str, str]]:
    """(key, value, where it comes from) for every setting, secrets hidden."""
    stack_values = stack_file(request.stack)
    layers: list[tuple[str, Mapping[str, str]]] = [
        ("Pulumi.yaml", project_config()),
        (PLACEHOLDER_SOURCE, placeholders(request)),
        (f"Pulumi.{request.stack}.yaml", stack_values.config),
        ("--config", request.config),
        ("--secret", request.secrets),
    ]
    values: dict[str, tuple[str, str]] = {}
    for source, layer in layers:
        for key, value in layer.items():
            values[_unqualified(key)] = (value, source)
    secret_keys = {*map(_unqualified, stack_values.secret_keys), *map(_unqualified, request.secrets)}
    return [
        (key, "[secret]" if key in secret_keys else value, source) for key, (value, source) in sorted(values.items())
    ]


def plan_markdown(run: StackRun, request: RenderRequest) -> str:
    custom = [resource for resource in run.resources if resource.custom]
    aws = [resource for resource in custom if resource.type.startswith("aws:")]
    kubernetes = [resource for resource in custom if resource.type.startswith("kubernetes:")]
    offering = (
        "the region's a and b (default)" if request.gpu_offering_azs is None else ", ".join(request.gpu_offering_azs)
    )
    lines = [
        f"# Plan of stack `{request.stack}` ({PROJECT})",
        "",
        f"Rendered offline by `python -m tools.render` under Pulumi's mocks: {len(run.resources)} resources "
        f"({len(aws)} AWS, {len(kubernetes)} Kubernetes, the rest components and providers). Ids, ARNs and "
        "hostnames are placeholders until `pulumi up` (each rendered file names those it holds in a header comment); "
        "pulumi-eks components are shown with their inputs.",
        f"AZs assumed to offer the GPU instance type (`--gpu-azs`): {offering}.",
        *(["", f"**Note:** {placeholder_note(code='`')}"] if placeholders(request) else []),
        "",
        "## What `pulumi preview` says",
        "",
        "The program's notes and warnings, as the preview prints them under the stack's diagnostics:",
        "",
        *(f"- {message.severity}: {message.text}" for message in run.messages),
        "",
        "## Configuration",
        "",
        "| Key | Value | From |",
        "|---|---|---|",
        *(f"| {key} | {_cell(value)} | {source} |" for key, value, source in config_rows(request)),
        "",
        "## Resources",
    ]
    # URN order groups every resource under its parent, the same way on every run.
    by_parent: dict[str, list[Resource]] = {}
    for resource in sorted(run.resources, key=lambda item: item.urn):
        by_parent.setdefault(resource.parent, []).append(resource)
    for parent, children in by_parent.items():
        lines += ["", f"### {urn_heading(parent)}", "", "| Type | Name | Key settings |", "|---|---|---|"]
        lines += [f"| {child.type} | {child.name} | {_cell(key_settings(child))} |" for child in children]
    lines += ["", "## Stack outputs", "", "| Output | Value |", "|---|---|"]
    for name, value in sorted(run.outputs.items()):
        lines.append(f"| {name} | {'[secret]' if name in run.secret_outputs else _cell(shown(value))} |")
    return "\n".join(lines) + "\n"


# --- files ---


def rendered_files(run: StackRun, request: RenderRequest) -> dict[str, str]:
    """Every file of the render, by path relative to the output folder."""
    files = {manifest_path(manifest): manifest_text(manifest) for manifest in kubernetes_manifests(run)}
    for resource in run.of_type(RAYSERVICE):
        files["serve-config.yaml"] = resource.inputs["spec"]["serveConfigV2"]
    files.update(helm_values_files(run))
    files = {path: placeholder_header(text) + text for path, text in files.items()}
    files["plan.md"] = plan_markdown(run, request)
    return files


def secret_parts(value: str) -> list[str]:
    """A secret setting's value and, for a JSON list (serveApiKeys), each item: any one of them must stay out."""
    try:
        items = json.loads(value)
    except ValueError:
        items = None
    return [value, *(item for item in items if isinstance(item, str))] if isinstance(items, list) else [value]


def leaked_secrets(files: Mapping[str, str], secret_values: Sequence[str]) -> list[str]:
    """Files that contain one of the secret values (or an item of one that is a list): a bug of the render, never
    to be written."""
    parts = [part for value in secret_values for part in secret_parts(value)]
    searched = [value for value in parts if len(value) >= MIN_SEARCHED_SECRET_LENGTH]
    return sorted(path for path, text in files.items() if any(value in text for value in searched))


def write_files(out: Path, files: Mapping[str, str]) -> None:
    """Writes the render, removing files a previous render wrote that this one no longer has."""
    listing = out / RENDERED_LIST
    previous = listing.read_text().split() if listing.exists() else []
    for stale in set(previous) - set(files):
        (out / stale).unlink(missing_ok=True)
    for path, text in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    listing.write_text("".join(f"{path}\n" for path in sorted(files)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.render",
        description="Render the stack offline: plan, Kubernetes manifests, serve config and Helm values.",
    )
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml applies (default: dev)")
    parser.add_argument("--out", type=Path, help="output folder (default: build/<stack>)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a setting as `pulumi config set` would; lists as JSON, e.g. '{CONFIG_EXAMPLE}'",
    )
    parser.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a secret setting (hfToken), as `pulumi config set --secret` would; never written to a file",
    )
    parser.add_argument(
        "--gpu-azs",
        metavar="AZ[,AZ...]",
        help="Availability Zones that offer gpuNodeType in the offline run (default: the region's a and b); "
        "'' for none",
    )
    return parser


def parse_args(argv: Sequence[str] | None) -> tuple[RenderRequest, Path]:
    parser = build_parser()
    args = parser.parse_args(argv)
    gpu_azs = None if args.gpu_azs is None else [az.strip() for az in args.gpu_azs.split(",") if az.strip()]
    request = RenderRequest(
        stack=args.stack,
        config=key_value_pairs(args.config, "--config", parser),
        secrets=key_value_pairs(args.secret, "--secret", parser),
        gpu_offering_azs=gpu_azs,
    )
    # The flag at fault, not the stack file's rule the program would otherwise report.
    for key in request.secrets:
        if _unqualified(key) not in SECRET_SETTINGS:
            parser.error(
                f"--secret {key}=...: {key} is not a secret setting; pass it with --config (secret: "
                f"{', '.join(sorted(SECRET_SETTINGS))})"
            )
    for key in request.config:
        if _unqualified(key) in SECRET_SETTINGS:
            parser.error(f"--config {key}=...: {key} is a secret setting; pass it with --secret, never in plain text")
    if args.stack not in SHIPPED_STACKS:
        parser.error(
            f"--stack {args.stack}: there is no Pulumi.{args.stack}.yaml (stacks: {', '.join(SHIPPED_STACKS)})"
        )
    return request, args.out or Path("build") / args.stack


def main(argv: Sequence[str] | None = None) -> int:
    request, out = parse_args(argv)
    try:
        run = evaluate(request)
    except StackFileError as error:
        print(error, file=sys.stderr)
        return 1
    except ConfigError as error:
        notes = getattr(error, "offline_notes", [])
        print(refusal_text(error, notes), file=sys.stderr)
        print_offline_answers(str(error), notes)
        print_engine_messages(getattr(error, "engine_messages", []))
        print_notes(request)
        return 1
    files = rendered_files(run, request)
    leaks = leaked_secrets(files, list(request.secrets.values()))
    if leaks:
        print(f"refusing to write: a secret value would land in {', '.join(leaks)}", file=sys.stderr)
        return 1
    write_files(out, files)
    print_engine_messages(run.messages)
    print(f"Rendered stack {request.stack} ({len(run.resources)} resources) into {out}/:")
    for path in sorted(files):
        print(f"  {path}")
    print_notes(request)
    return 0


OFFLINE_ANSWERS = (
    "Answered offline, from tables of this repository (`pulumi preview` and `pulumi up` ask the live services, "
    "whose answers decide):"
)


# Said after a problem that rests on an offline table: its words are the live service's ("not offered", "does not
# know it"), but here a table of this repository decided.
DECIDED_BY_A_TABLE = " [decided offline by a table of this repository, not by the live service: see below]"


def refusal_text(error: ConfigError, notes: Sequence[OfflineNote]) -> str:
    """The program's refusal, each problem about a subject an offline table answered marked as decided by it."""
    lines = [str(error).splitlines()[0]]
    for problem in error.problems:
        decided = any(note.subject in problem for note in notes)
        lines.append(f"  - {problem}{DECIDED_BY_A_TABLE if decided else ''}")
    return "\n".join(lines)


def print_offline_answers(refusal: str, notes: Sequence[OfflineNote]) -> None:
    """After a refusal: the lookups behind it (those about something it names) that the render answered from its
    own tables (tools.offline)."""
    behind = [note.text for note in notes if note.subject in refusal]
    if behind:
        print("\n".join([OFFLINE_ANSWERS, *(f"  - {text}" for text in behind)]), file=sys.stderr)


def print_engine_messages(messages: Sequence[EngineMessage]) -> None:
    """The program's notes and warnings on stderr, as `pulumi preview` prints them: `info: ...`, `warning: ...`."""
    for message in messages:
        print(f"{message.severity}: {message.text}", file=sys.stderr)


def print_notes(request: RenderRequest) -> None:
    """After the render or its refusal: what the render stood in for, which `pulumi up` would refuse."""
    if placeholders(request):
        print(placeholder_note(), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
