"""The policy pack, run offline on the stacks the mock runner captures.

An adapter turns a mock run into what the engine hands a policy pack during `pulumi preview`:
resource policies get each resource's inputs, stack policies every resource's outputs (the mocks
echo inputs as outputs) plus the stack resource, whose properties are the stack outputs with the
secret ones wrapped as the engine wraps them. The pack then runs through pulumi_policy's own
analyzer service (`OfflinePolicyEngine`). Every policy must pass on every shipped stack, and every
policy is made to fire, at its level, by breaking the stack through config or by editing what
was captured.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from infra.settings import kinds as program_kinds
from infra.settings import rules_network as program_rules
from infra.settings import rules_serving as program_serving_rules
from policy.ray_llm_policies import governance as pack_governance
from policy.ray_llm_policies import internet as pack_internet
from policy.ray_llm_policies import pinning as pack_pinning
from policy.ray_llm_policies.pack import PACK_NAME, POLICIES
from tests.conftest import API_KEYS, EXPOSED_SECRET_KEYS, NEW_CLUSTER, SERVE_AUTOSCALING, exposed
from tests.policy_engine import EngineResource, OfflinePolicyEngine, Violation, secret
from tools.offline import Resource, StackRun, run_stack
from tools.project import PROJECT, SHIPPED_STACKS, declared_config

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY
STACK_TYPE = "pulumi:pulumi:Stack"
CONFIG_KEYS = frozenset(declared_config())
HF_TOKEN = "hf_offlineTestToken0123456789"
# Dev exposed to the internet from one public range, with the keys it then needs (pass EXPOSED_SECRET_KEYS).
INTERNET_FACING = exposed("internet-facing", serveSourceCidrs=["100.24.20.0/24"])


# Findings the shipped stacks are known to have. Strict: once a stack is fixed, this list must shrink.
@dataclass
class CapturedStack:
    """A mock run as the policy engine would see it; a test edits it to break the stack."""

    stack: str
    resources: list[Resource]
    outputs: dict[str, Any]
    secret_outputs: set[str]

    @classmethod
    def of(cls, run: StackRun, stack: str) -> CapturedStack:
        # Deep copies: the runs are shared with other tests.
        resources = [dataclasses.replace(r, inputs=copy.deepcopy(r.inputs)) for r in run.resources]
        return cls(stack, resources, copy.deepcopy(run.outputs), set(run.secret_outputs))

    def get(self, type_: str, name: str) -> Resource:
        (match,) = [r for r in self.resources if r.type == type_ and r.name == name]
        return match

    def replace(self, type_: str, name: str, **changes: Any) -> None:
        index = self.resources.index(self.get(type_, name))
        self.resources[index] = dataclasses.replace(self.resources[index], **changes)

    @property
    def stack_urn(self) -> str:
        return f"urn:pulumi:{self.stack}::{PROJECT}::{STACK_TYPE}::{PROJECT}-{self.stack}"

    def _engine_resource(self, resource: Resource, properties: dict[str, Any]) -> EngineResource:
        return EngineResource(
            resource.type, resource.name, resource.urn, properties, resource.parent, resource.dependencies
        )

    def analyzed_inputs(self) -> list[EngineResource]:
        """What `Analyze` gets: each resource's inputs, secret ones marked as the engine marks them."""
        stack = EngineResource(STACK_TYPE, f"{PROJECT}-{self.stack}", self.stack_urn)
        return [stack] + [
            self._engine_resource(r, {k: secret(v) if k in r.secret_inputs else v for k, v in r.inputs.items()})
            for r in self.resources
        ]

    def analyzed_outputs(self) -> list[EngineResource]:
        """What `AnalyzeStack` gets: each resource's outputs, and the stack outputs on the stack resource."""
        outputs = {k: secret(v) if k in self.secret_outputs else v for k, v in self.outputs.items()}
        stack = EngineResource(STACK_TYPE, f"{PROJECT}-{self.stack}", self.stack_urn, outputs)
        return [stack] + [self._engine_resource(r, r.inputs) for r in self.resources]


@pytest.fixture(scope="module")
def engine() -> OfflinePolicyEngine:
    return OfflinePolicyEngine(PACK_NAME, POLICIES)


@pytest.fixture(scope="module")
def shipped_runs(dev: StackRun, prod: StackRun) -> dict[str, StackRun]:
    runs = {"dev": dev, "prod": prod}
    assert sorted(runs) == SHIPPED_STACKS, "a new shipped stack needs a fixture here"
    return runs


def preview(engine: OfflinePolicyEngine, captured: CapturedStack) -> list[Violation]:
    return engine.preview(captured.analyzed_inputs(), captured.analyzed_outputs())


@pytest.fixture(scope="module")
def shipped_findings(engine: OfflinePolicyEngine, shipped_runs: dict[str, StackRun]) -> dict[str, list[Violation]]:
    return {stack: preview(engine, CapturedStack.of(run, stack)) for stack, run in shipped_runs.items()}


def fired(violations: list[Violation]) -> set[str]:
    return {violation.policy for violation in violations}


# --- every policy passes on every shipped stack ---


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
@pytest.mark.parametrize("policy", [p.name for p in POLICIES])
def test_policy_passes_on_shipped_stack(shipped_findings: dict[str, list[Violation]], stack: str, policy: str) -> None:
    findings = [v for v in shipped_findings[stack] if v.policy == policy]
    assert findings == []


def test_hf_token_as_secret_config_passes(engine: OfflinePolicyEngine) -> None:
    run = run_stack({"hfToken": HF_TOKEN}, stack="prod", secret_keys=("hfToken",))
    assert preview(engine, CapturedStack.of(run, "prod")) == []


@pytest.mark.parametrize(
    ("overrides", "stack"),
    [
        ({**INTERNET_FACING, **NEW_CLUSTER, "hfToken": HF_TOKEN}, "dev"),
        ({"hfToken": HF_TOKEN, "serveApiKeys": API_KEYS}, "prod"),
    ],
    ids=["internet-facing-new-cluster", "internal"],
)
def test_exposed_stack_with_keys_and_token_passes(
    engine: OfflinePolicyEngine, overrides: dict[str, Any], stack: str
) -> None:
    """The stack's own load balancer (its selector naming the active cluster too, with newCluster), ConfigMaps
    (dashboards, the auth code, the model mirror's script) and env literals, beside real API keys and an HF token."""
    run = run_stack(overrides, stack=stack, secret_keys=(*EXPOSED_SECRET_KEYS, "hfToken"))
    assert preview(engine, CapturedStack.of(run, stack)) == []


def test_a_side_with_the_host_kv_tier_passes(engine: OfflinePolicyEngine) -> None:
    """NIXL as the MultiConnector's first child keeps its EFA backend, and the tiered side's unset engine id is
    vLLM's uuid per engine (infra/settings/kv_offload.py), not a missing one."""
    run = run_stack({"modelSource": "Qwen/Qwen3-8B", "prefixCaching": "on", "prefillKvOffloadGiB": 16})
    assert preview(engine, CapturedStack.of(run, "dev")) == []


def test_kubeconfig_output_is_secret(shipped_runs: dict[str, StackRun]) -> None:
    """The half of credentials-not-in-outputs a policy cannot see: policies get secrets unmarked."""
    for run in shipped_runs.values():
        assert "kubeconfig" in run.secret_outputs


# --- every policy fires when the stack is broken ---


@dataclass(frozen=True)
class Breakage:
    """One way to break the stack, and the policy that must catch it."""

    id: str
    policy: str
    level: EnforcementLevel
    config_key: str | None  # the stack-config key the message must name (None: no key controls it)
    overrides: dict[str, Any] = field(default_factory=dict)
    secret_keys: tuple[str, ...] = ()
    stack: str = "dev"
    edit: Callable[[CapturedStack], None] | None = None
    also_fires: frozenset[str] = frozenset()  # other policies the same breakage rightly trips


def _inputs(type_: str, name: str) -> Callable[[CapturedStack], dict[str, Any]]:
    return lambda captured: captured.get(type_, name).inputs


LAUNCH_TEMPLATE = _inputs("aws:ec2/launchTemplate:LaunchTemplate", "gpu-nodes-gpu")
GPU_NODE_GROUP = _inputs("eks:index:ManagedNodeGroup", "gpu-nodes-gpu")
EKS_CLUSTER = _inputs("eks:index:Cluster", "cluster-eks")
RAYSERVICE = _inputs("kubernetes:ray.io/v1:RayService", "serving-rayservice")
KUBERAY_RELEASE = _inputs("kubernetes:helm.sh/v3:Release", "serving-kuberay-kuberay-operator")
KUBERNETES_SERVICE = "kubernetes:core/v1:Service"
SERVE_LB = _inputs(KUBERNETES_SERVICE, "serving-serve-load-balancer")


def _set_interfaces(**changes: Any) -> Callable[[CapturedStack], None]:
    def edit(captured: CapturedStack) -> None:
        for interface in LAUNCH_TEMPLATE(captured)["networkInterfaces"]:
            interface.update(changes)

    return edit


def _without_launch_template(captured: CapturedStack) -> None:
    group = captured.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu")
    del group.inputs["launchTemplate"]
    kept = tuple(d for d in group.dependencies if "launchTemplate" not in d)
    captured.replace(group.type, group.name, dependencies=kept)


def _edit_serve_config(change: Callable[[dict[str, Any]], None]) -> Callable[[CapturedStack], None]:
    """Applies `change(app)` to each application of the RayService's serveConfigV2 (a YAML document in a string)."""

    def edit(captured: CapturedStack) -> None:
        spec = RAYSERVICE(captured)["spec"]
        config = yaml.safe_load(spec["serveConfigV2"])
        for app in config["applications"]:
            change(app)
        spec["serveConfigV2"] = yaml.safe_dump(config)

    return edit


def _edit_llm_configs(change: Callable[[str, dict[str, Any]], None]) -> Callable[[CapturedStack], None]:
    """Applies `change(side, llm_config)` to both sides of the PD app in serveConfigV2."""

    def change_app(app: dict[str, Any]) -> None:
        for side in ("prefill", "decode"):
            change(side, app["args"][f"{side}_config"])

    return _edit_serve_config(change_app)


def _set_nixl_backends(backends: list[str] | None) -> Callable[[CapturedStack], None]:
    def change(_side: str, llm_config: dict[str, Any]) -> None:
        transfer = llm_config["engine_kwargs"]["kv_transfer_config"]
        if backends is None:
            del transfer["kv_connector_extra_config"]
        else:
            transfer["kv_connector_extra_config"]["backends"] = backends

    return _edit_llm_configs(change)


def _on_decode(path: tuple[str, ...], value: Any) -> Callable[[CapturedStack], None]:
    def change(side: str, llm_config: dict[str, Any]) -> None:
        if side == "decode":
            *parents, leaf = path
            target = llm_config
            for key in parents:
                target = target[key]
            target[leaf] = value

    return _edit_llm_configs(change)


def _set_worker_image(image: str) -> Callable[[CapturedStack], None]:
    def edit(captured: CapturedStack) -> None:
        worker = RAYSERVICE(captured)["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
        worker["template"]["spec"]["containers"][0]["image"] = image

    return edit


def _add_output(name: str, value: Callable[[CapturedStack], Any]) -> Callable[[CapturedStack], None]:
    return lambda captured: captured.outputs.update({name: value(captured)})


def _widen_reader(change: Callable[[list[dict[str, Any]]], None]) -> Callable[[CapturedStack], None]:
    """Edits the statements of the GPU workers' S3 read policy (infra/serving/model_cache.py reader_policy)."""

    def edit(captured: CapturedStack) -> None:
        inputs = captured.get("aws:iam/rolePolicy:RolePolicy", "model-cache-reader").inputs
        policy = json.loads(inputs["policy"])
        change(policy["Statement"])
        inputs["policy"] = json.dumps(policy)

    return edit


def _set_statement(index: int, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda statements: statements[index].update(changes)


# Each a way the workers' role could reach beyond the model's prefix.
READER_WIDENINGS = (
    ("whole-bucket", _set_statement(0, Resource=["arn:aws:s3:::any-bucket/*"])),
    ("write", _set_statement(0, Action=["s3:GetObject", "s3:PutObject"])),
    ("any-action", _set_statement(0, Action="s3:*")),
    ("unnarrowed-list", lambda statements: statements[1].pop("Condition")),
    ("list-another-prefix", _set_statement(1, Condition={"StringLike": {"s3:prefix": ["other/*"]}})),
    ("extra-statement", lambda statements: statements.append({"Effect": "Allow", "Action": "ec2:*", "Resource": "*"})),
)


# The widenings that grant a whole service on every resource, which iam-no-administrators refuses for any role.
WIDENINGS_TO_EVERYTHING = frozenset({"extra-statement"})
ADMINISTERS = frozenset({"iam-no-administrators"})
READER_ROLE = _inputs("aws:iam/role:Role", "model-cache-reader")
READER_POLICY = _inputs("aws:iam/rolePolicy:RolePolicy", "model-cache-reader")
ANY_S3 = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"


def _statement_as_one_object(captured: CapturedStack) -> None:
    """IAM takes one statement as well as a list (reference_policies_elements_statement.html)."""
    READER_POLICY(captured)["policy"] = json.dumps({"Version": "2012-10-17", "Statement": ANY_S3})


def _loosen_trust(pattern: bool) -> Callable[[CapturedStack], None]:
    """The reader's trust let in by a StringLike pattern over the namespace (or no `:sub` at all), its policy
    widened: the role is still the workers'."""

    def edit(captured: CapturedStack) -> None:
        role = READER_ROLE(captured)
        trust = json.loads(role["assumeRolePolicy"])
        condition = trust["Statement"][0]["Condition"]
        (sub,) = [key for key in condition["StringEquals"] if key.endswith(":sub")]
        subject = condition["StringEquals"].pop(sub)
        if pattern:
            condition["StringLike"] = {sub: subject.rsplit(":", 1)[0] + ":*"}
        role["assumeRolePolicy"] = json.dumps(trust)
        _widen_reader(lambda statements: statements.append(ANY_S3))(captured)

    return edit


def _add_resource(
    captured: CapturedStack, type_: str, name: str, inputs: dict[str, Any], depends_on: tuple[str, ...] = ()
) -> Resource:
    return _added(captured, ("aws:iam/rolePolicy:RolePolicy", "model-cache-reader"), type_, name, inputs, depends_on)


def _attach_by_name(captured: CapturedStack) -> None:
    """A PolicyAttachment naming a named reader role, with no dependency on it."""
    READER_ROLE(captured)["name"] = "workers-model-reader"
    _add_resource(
        captured,
        "aws:iam/policyAttachment:PolicyAttachment",
        "extra",
        {"name": "extra", "roles": ["workers-model-reader"], "policyArn": ADMIN},
    )


def _attach_exclusively(captured: CapturedStack) -> None:
    role = captured.get("aws:iam/role:Role", "model-cache-reader")
    _add_resource(
        captured,
        "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive",
        "extra",
        {"roleName": "model-cache-reader", "policyArns": [ADMIN]},
        (role.urn,),
    )


def _pod_identity_role(captured: CapturedStack) -> None:
    """A second role, handed to the workers' service account by an EKS Pod Identity association."""
    rayservice = RAYSERVICE(captured)
    (group,) = rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }
    role = _add_resource(captured, "aws:iam/role:Role", "extra", {"assumeRolePolicy": json.dumps(trust)})
    policy = {"Version": "2012-10-17", "Statement": [ANY_S3]}
    _add_resource(
        captured, "aws:iam/rolePolicy:RolePolicy", "extra", {"role": "extra", "policy": json.dumps(policy)}, (role.urn,)
    )
    association = {
        "clusterName": "cluster",
        "namespace": rayservice["metadata"]["namespace"],
        "serviceAccount": group["template"]["spec"]["serviceAccountName"],
        "roleArn": "arn:aws:iam::123456789012:role/extra",
    }
    _add_resource(captured, "aws:eks/podIdentityAssociation:PodIdentityAssociation", "extra", association, (role.urn,))


# Each a route to the workers' role, or to their rights, that is not the stack's one RolePolicy: IAM's StringLike
# wildcards (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
# #Conditions_String), EKS Pod Identity (https://docs.aws.amazon.com/eks/latest/userguide/pod-identities.html), and
# the attachments pulumi-aws declares (sdk/python pulumi_aws/iam/role.py inline_policies, managed_policy_arns;
# policy_attachment.py roles; role_policy_attachments_exclusive.py policy_arns).
READER_ROUTES = (
    ("statement-object", _statement_as_one_object),
    # A TypeScript program may pass the document itself: @pulumi/aws's RolePolicyArgs.policy is
    # `Input<string | PolicyDocument>` (sdk/nodejs/iam/rolePolicy.ts).
    ("document-object", lambda c: READER_POLICY(c).update(policy={"Version": "2012-10-17", "Statement": [ANY_S3]})),
    ("trust-pattern", _loosen_trust(pattern=True)),
    ("trust-any-subject", _loosen_trust(pattern=False)),
    (
        "role-inline-policy",
        lambda c: READER_ROLE(c).update(inlinePolicies=[{"name": "x", "policy": json.dumps({"Statement": [ANY_S3]})}]),
    ),
    ("role-managed-arns", lambda c: READER_ROLE(c).update(managedPolicyArns=[ADMIN])),
    ("policy-attachment-by-name", _attach_by_name),
    ("attachments-exclusive", _attach_exclusively),
    ("pod-identity", _pod_identity_role),
)


SPLIT_INTERNET = ["0.0.0.0/1", "128.0.0.0/1"]  # as open as 0.0.0.0/0, without the literal
# Ranges that let the whole internet in: config validation rejects both (infra/settings/config.py covers_the_internet);
# the policies guard stacks built some other way.
OPEN_TO_THE_INTERNET = (("open", ["0.0.0.0/0"]), ("split-internet", SPLIT_INTERNET))


def _set_ranges(
    ranges: list[str], inputs: Callable[[CapturedStack], dict], *path: str
) -> Callable[[CapturedStack], None]:
    """An edit that sets the CIDR list at `path` in a captured resource's inputs."""

    def edit(captured: CapturedStack) -> None:
        holder = inputs(captured)
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = list(ranges)

    return edit


def _make_internet_facing_without_ranges(captured: CapturedStack) -> None:
    service = SERVE_LB(captured)
    service["metadata"]["annotations"].pop("service.beta.kubernetes.io/aws-load-balancer-internal")
    service["spec"].pop("loadBalancerSourceRanges")


TLS_CERT = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
TLS_PORTS = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"


TLS_POLICY = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
# Negotiation policies that let a client down to TLS 1.0 or 1.1
# (https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html); None: the annotation
# left out, and AWS makes the listener with ELBSecurityPolicy-2016-08, which takes TLS 1.0 (the same page).
TLS_1_0_OR_1_1_POLICIES = (
    ("2016-08", "ELBSecurityPolicy-2016-08"),
    ("tls-1-0", "ELBSecurityPolicy-TLS-1-0-2015-04"),
    ("tls13-down-to-1-1", "ELBSecurityPolicy-TLS13-1-1-2021-06"),
    ("none", None),
)


def _set_tls_policy(policy: str | None) -> Callable[[CapturedStack], None]:
    def edit(captured: CapturedStack) -> None:
        annotations = SERVE_LB(captured)["metadata"]["annotations"]
        annotations.pop(TLS_POLICY)
        if policy is not None:
            annotations[TLS_POLICY] = policy

    return edit


def _add_plain_port(captured: CapturedStack) -> None:
    SERVE_LB(captured)["spec"]["ports"].append({"name": "http", "port": 80, "targetPort": 8000, "protocol": "TCP"})


HTTPS_ONLY = ({"name": "https", "port": 443},)
# A serveService port named `serve` that goes elsewhere: KubeRay 1.7.0 keeps it whole in place of the head's (to keep
# its appProtocol; vendor/kuberay-v1.7.0/service.go BuildServeService), so it reaches the dashboard; 1.4.0 would drop
# its targetPort.
SERVE_PORT_ONTO_DASHBOARD = ({"name": "serve", "port": 8000, "targetPort": 8265},)


def _serve_service(
    internal: bool, certificate: bool, tls_ports: str = "", ranges: bool = True, ports: Sequence[dict] = HTTPS_ONLY
) -> Callable:
    """A RayService's spec.serveService made a load balancer, as a hand edit of the stack's manifest could: KubeRay
    makes it the serve Service with the head's `serve` port, 8000, and only that one where `ports` names no port
    `serve` (BuildServeService in vendor/kuberay-v1.4.0/service.go and vendor/kuberay-v1.7.0/service.go)."""

    def edit(captured: CapturedStack) -> None:
        lb = SERVE_LB(captured)
        annotations = {
            key: value
            for key, value in lb["metadata"]["annotations"].items()
            if (key != TLS_CERT or certificate) and (internal or not key.endswith("-internal"))
        }
        if tls_ports:
            annotations[TLS_PORTS] = tls_ports
        spec = {"type": "LoadBalancer", "ports": list(ports)}
        if ranges:
            spec["loadBalancerSourceRanges"] = ["100.24.20.0/24"]
        RAYSERVICE(captured)["spec"]["serveService"] = {"metadata": {"annotations": annotations}, "spec": spec}

    return edit


_without_auth_ingress = _edit_serve_config(lambda app: app["args"].pop("ingress_cls_config"))


CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# A credential that is none of the stack's Secrets' values, as an OpenAI-style key looks.
FOREIGN_KEY = "sk-" + "4b1d" * 12


def _add_config_map(**contents: dict[str, str]) -> Callable[[CapturedStack], None]:
    """A ConfigMap beside the RayService with these `data`/`binaryData` contents."""

    def edit(captured: CapturedStack) -> None:
        namespace = RAYSERVICE(captured)["metadata"]["namespace"]
        metadata = {"name": "client-settings", "namespace": namespace}
        _add_resource(captured, CONFIG_MAP, "client-settings", {"metadata": metadata, **contents})

    return edit


def _set_app_env_vars(**env_vars: str) -> Callable[[CapturedStack], None]:
    """Env vars in the application's runtime_env, which Ray sets in every replica of it."""
    return _edit_serve_config(lambda app: app.setdefault("runtime_env", {}).setdefault("env_vars", {}).update(env_vars))


def _set_engine_env_vars(**env_vars: str) -> Callable[[CapturedStack], None]:
    """Env vars in each LLM config's runtime_env, which Ray Serve LLM hands to the engine and its workers."""
    return _edit_llm_configs(lambda _side, llm_config: llm_config["runtime_env"]["env_vars"].update(env_vars))


def _add_worker_env(name: str, value: str) -> Callable[[CapturedStack], None]:
    def edit(captured: CapturedStack) -> None:
        worker = RAYSERVICE(captured)["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
        worker["template"]["spec"]["containers"][0]["env"].append({"name": name, "value": value})

    return edit


def _keys_in_ingress_kwargs(captured: CapturedStack) -> None:
    """The keys handed to the auth ingress as a literal list instead of the keys file."""
    kwargs = {"api_keys": API_KEYS}
    _edit_serve_config(lambda app: app["args"]["ingress_cls_config"]["ingress_extra_kwargs"].update(kwargs))(captured)


# Selectors of a load balancer that reach Ray pods other than the ones KubeRay marks as serving (ray.io/serve "true",
# on workers from their creation, on the head once its proxy is healthy: kuberay v1.4.0 common/pod.go BuildPod,
# rayservice_controller.go updateHeadPodServeLabel) of the stack's RayService (its app.kubernetes.io/instance label).
NOT_SERVING_SELECTORS = (
    ("head", {"ray.io/node-type": "head"}),
    ("cluster", {"ray.io/cluster": "ray-llm-42g7k"}),
    ("workers", {"ray.io/node-type": "worker", "ray.io/group": "gpu-workers"}),
    ("instance-only", {"app.kubernetes.io/instance": "ray-llm"}),
    ("serve-label-only", {"ray.io/serve": "true"}),
)
# Target ports of the Ray head other than Serve's (the head's container ports, infra/serving/rayservice.py head_group,
# and the metrics port KubeRay adds, vendor/kuberay-v1.4.0/service.go getServicePorts), by number and by name; the
# last, no targetPort at all, targets the port itself (443), which no Ray pod serves.
NOT_SERVE_TARGETS = (
    ("dashboard", 8265),
    ("dashboard-by-name", "dashboard"),
    ("client", 10001),
    ("client-by-name", "client"),
    ("gcs", 6379),
    ("gcs-by-name", "gcs-server"),
    ("metrics", 8080),
    ("metrics-by-name", "metrics"),
    ("none", None),
)


def _set_target_port(target: int | str | None) -> Callable[[CapturedStack], None]:
    def edit(captured: CapturedStack) -> None:
        (port,) = SERVE_LB(captured)["spec"]["ports"]
        if target is None:
            del port["targetPort"]
        else:
            port["targetPort"] = target

    return edit


def _add_node_port_service(captured: CapturedStack) -> None:
    """A second Service in front of the serving pods, of type NodePort: every node opens the serve port in the clear."""
    spec = {**SERVE_LB(captured)["spec"], "type": "NodePort", "ports": [{"port": 8000, "targetPort": 8000}]}
    spec.pop("loadBalancerSourceRanges", None)
    _add_resource(captured, KUBERNETES_SERVICE, "serve-node-port", {"metadata": {"name": "serve-np"}, "spec": spec})


def _set_head_group(**changes: Any) -> Callable[[CapturedStack], None]:
    """KubeRay makes the head Service, and the serve Service, of the head group's serviceType and headService
    (vendor/kuberay-v1.4.0/service.go BuildServiceForHeadPod, BuildServeService)."""
    return lambda captured: RAYSERVICE(captured)["spec"]["rayClusterConfig"]["headGroupSpec"].update(changes)


def _head_service_load_balancer(captured: CapturedStack) -> None:
    """The head Service made an internal load balancer with a certificate on every port and source ranges: it passes
    the endpoint rules, and puts the dashboard, GCS and Ray client behind a load balancer."""
    annotations = {**SERVE_LB(captured)["metadata"]["annotations"], TLS_PORTS: "*"}
    spec = {"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}
    _set_head_group(headService={"metadata": {"annotations": annotations}, "spec": spec})(captured)


NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DEFAULT_DENY = _inputs(NETWORK_POLICY, "serving-network-policy-default-deny-ingress")


def _without_default_deny(captured: CapturedStack) -> None:
    captured.resources.remove(captured.get(NETWORK_POLICY, "serving-network-policy-default-deny-ingress"))


GCS_STORE = _inputs("aws:elasticache/replicationGroup:ReplicationGroup", "gcs-store-valkey")


def _without(key: str) -> Callable[[CapturedStack], None]:
    return lambda captured: GCS_STORE(captured).pop(key)


# --- least privilege (issue 51): nine insecure changes a review found the pack missing ---


def _added(
    captured: CapturedStack,
    like: tuple[str, str],
    type_: str,
    name: str,
    inputs: dict,
    dependencies: tuple[str, ...] = (),
) -> Resource:
    """A resource declared beside the stack's own, as a change to infra/ would declare it: placed like `like`."""
    model = captured.get(*like)
    urn = f"{model.urn.rsplit('::', 2)[0]}::{type_}::{name}"
    added = dataclasses.replace(model, type=type_, name=name, urn=urn, inputs=inputs, dependencies=dependencies)
    captured.resources.append(added)
    return added


def _worker_pod(captured: CapturedStack) -> dict[str, Any]:
    return RAYSERVICE(captured)["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]


def _host_root_into_workers(captured: CapturedStack) -> None:
    pod = _worker_pod(captured)
    pod["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    pod["containers"][0]["volumeMounts"].append({"name": "host", "mountPath": "/host"})


def _privileged_host_worker(captured: CapturedStack) -> None:
    pod = _worker_pod(captured)
    pod.update(hostNetwork=True, hostPID=True)
    pod["containers"][0]["securityContext"]["privileged"] = True


def _allow_all_ingress(captured: CapturedStack) -> None:
    namespace = DEFAULT_DENY(captured)["metadata"]["namespace"]
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-all", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{}]},
    }
    like = (NETWORK_POLICY, "serving-network-policy-default-deny-ingress")
    _added(captured, like, NETWORK_POLICY, "serving-network-policy-allow-all", policy)


def _store_open_to_the_internet(captured: CapturedStack) -> None:
    group = captured.get("aws:ec2/securityGroup:SecurityGroup", "gcs-store-clients").inputs
    group["ingress"].append({"protocol": "tcp", "fromPort": 6379, "toPort": 6379, "cidrBlocks": ["0.0.0.0/0"]})


def _public_model_bucket(captured: CapturedStack) -> None:
    block = captured.get("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "model-cache-bucket").inputs
    block.update(blockPublicPolicy=False, restrictPublicBuckets=False)
    statement = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
    policy = {
        "bucket": "model-cache-bucket-id",
        "policy": json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
    }
    bucket = ("aws:s3/bucket:Bucket", "model-cache-bucket")
    _added(
        captured, bucket, "aws:s3/bucketPolicy:BucketPolicy", "model-cache-public", policy, (captured.get(*bucket).urn,)
    )


def _admin_node_role(captured: CapturedStack) -> None:
    attachment = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    inputs = {"policyArn": "arn:aws:iam::aws:policy/AdministratorAccess", "role": "cluster-node-role-role"}
    role = ("aws:iam/role:Role", "cluster-node-role")
    _added(
        captured,
        (attachment, "cluster-node-role-worker"),
        attachment,
        "cluster-node-role-admin",
        inputs,
        (captured.get(*role).urn,),
    )


def _autoscaler_does_anything(captured: CapturedStack) -> None:
    policy = captured.get("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy").inputs
    document = json.loads(policy["policy"])
    document["Statement"][1]["Action"] = "*"
    policy["policy"] = json.dumps(document)


def _serving_account_cluster_admin(captured: CapturedStack) -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "model-reader-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "model-reader",
                "namespace": RAYSERVICE(captured)["metadata"]["namespace"],
            }
        ],
    }
    like = (NETWORK_POLICY, "serving-network-policy-default-deny-ingress")
    _added(captured, like, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "serving-admin", binding)


def _gpu_nodes_in_a_public_subnet(captured: CapturedStack) -> None:
    public = captured.get("aws:ec2/subnet:Subnet", "network-public-sa-east-1a")
    private = captured.get("aws:ec2/subnet:Subnet", "network-private-sa-east-1a")
    group = captured.get("eks:index:ManagedNodeGroup", "gpu-nodes-gpu")
    group.inputs["subnetIds"] = ["network-public-sa-east-1a-id"]
    deps = tuple(public.urn if urn == private.urn else urn for urn in group.dependencies)
    captured.replace("eks:index:ManagedNodeGroup", "gpu-nodes-gpu", dependencies=deps)


def _workers_to_the_dashboard(captured: CapturedStack) -> None:
    """The old "Ray pods to each other on every port" brought back as a rule that names its ports, 8265 among them."""
    policy = captured.get(NETWORK_POLICY, "serving-network-policy-ray-pods-to-gcs").inputs
    policy["spec"]["ingress"][0]["ports"].append({"protocol": "TCP", "port": 8265})


LEAST_PRIVILEGE_BREAKAGES = [
    Breakage("host-root-into-workers", "pods-confined", MANDATORY, None, edit=_host_root_into_workers),
    Breakage("privileged-host-worker", "pods-confined", MANDATORY, None, edit=_privileged_host_worker),
    Breakage(
        "allow-all-ingress",
        "network-policies-name-ports",
        MANDATORY,
        None,
        edit=_allow_all_ingress,
        also_fires=frozenset({"ray-dashboard-operator-only"}),
    ),
    Breakage(
        "workers-to-the-dashboard", "ray-dashboard-operator-only", MANDATORY, None, edit=_workers_to_the_dashboard
    ),
    Breakage("store-open", "gcs-store-security-groups-only", MANDATORY, None, edit=_store_open_to_the_internet),
    Breakage(
        "public-model-bucket",
        "buckets-private",
        MANDATORY,
        None,
        overrides={"modelCache": True},
        edit=_public_model_bucket,
    ),
    Breakage("admin-node-role", "iam-no-administrators", MANDATORY, None, edit=_admin_node_role),
    Breakage(
        "autoscaler-action-star",
        "iam-no-administrators",
        MANDATORY,
        None,
        overrides=SERVE_AUTOSCALING,
        edit=_autoscaler_does_anything,
    ),
    Breakage(
        "serving-cluster-admin", "kubernetes-no-admin-bindings", MANDATORY, None, edit=_serving_account_cluster_admin
    ),
    Breakage("gpu-nodes-public-subnet", "nodes-private-subnets", MANDATORY, None, edit=_gpu_nodes_in_a_public_subnet),
]


BREAKAGES = [
    Breakage(
        "gcs-store-in-the-clear", "gcs-store-protected", MANDATORY, None, edit=_without("transitEncryptionEnabled")
    ),
    Breakage(
        "gcs-store-transit-off",
        "gcs-store-protected",
        MANDATORY,
        None,
        edit=lambda c: GCS_STORE(c).update(transitEncryptionEnabled=False),
    ),
    Breakage(
        "gcs-store-transit-preferred",
        "gcs-store-protected",
        MANDATORY,
        None,
        edit=lambda c: GCS_STORE(c).update(transitEncryptionMode="preferred"),
    ),
    Breakage(
        "gcs-store-at-rest-off",
        "gcs-store-protected",
        MANDATORY,
        None,
        edit=lambda c: GCS_STORE(c).update(atRestEncryptionEnabled=False),
    ),
    Breakage("gcs-store-no-password", "gcs-store-protected", MANDATORY, None, edit=_without("authToken")),
    # The apostrophe EC2 CreateSecurityGroup refused in `pulumi up` (issue 49).
    Breakage(
        "apostrophe-in-group-description",
        "aws-input-rules",
        MANDATORY,
        None,
        edit=lambda c: _inputs("aws:ec2/securityGroup:SecurityGroup", "gpu-nodes-efa")(c).update(
            description="EFA: all traffic between the GPU nodes' EFA interfaces"
        ),
    ),
    Breakage(
        "imds-two-hops",
        "nodes-imds-one-hop",
        MANDATORY,
        None,
        edit=lambda c: LAUNCH_TEMPLATE(c)["metadataOptions"].update(httpPutResponseHopLimit=2),
    ),
    Breakage(
        "imds-tokens-optional",
        "nodes-imds-one-hop",
        MANDATORY,
        None,
        edit=lambda c: LAUNCH_TEMPLATE(c)["metadataOptions"].update(httpTokens="optional"),
    ),
    Breakage("no-default-deny", "ray-namespace-default-deny", MANDATORY, None, edit=_without_default_deny),
    Breakage(
        "default-deny-admits-all",
        "ray-namespace-default-deny",
        MANDATORY,
        None,
        edit=lambda c: DEFAULT_DENY(c)["spec"].update(ingress=[{}]),
        # A rule of every port from everyone: the dashboard's among them.
        also_fires=frozenset({"network-policies-name-ports", "ray-dashboard-operator-only"}),
    ),
    Breakage(
        "default-deny-selects-some",
        "ray-namespace-default-deny",
        MANDATORY,
        None,
        edit=lambda c: DEFAULT_DENY(c)["spec"].update(podSelector={"matchLabels": {"app": "x"}}),
    ),
    Breakage("lt-no-efa", "gpu-nodes-efa", MANDATORY, "gpuNodeType", edit=_set_interfaces(interfaceType="interface")),
    Breakage(
        "no-launch-template",
        "gpu-nodes-efa",
        MANDATORY,
        "gpuNodeType",
        edit=_without_launch_template,
        # Without its launch template the group boots from EKS's 20 GiB default disk.
        also_fires=frozenset({"gpu-root-volume-size"}),
    ),
    Breakage(
        "two-subnets",
        "gpu-nodes-single-az",
        MANDATORY,
        "gpuAz",
        edit=lambda c: GPU_NODE_GROUP(c)["subnetIds"].append("network-private-sa-east-1b-id"),
    ),
    Breakage(
        "no-subnets", "gpu-nodes-single-az", MANDATORY, "gpuAz", edit=lambda c: GPU_NODE_GROUP(c).pop("subnetIds")
    ),
    Breakage(
        "lt-public-ip", "nodes-no-public-ip", MANDATORY, None, edit=_set_interfaces(associatePublicIpAddress="true")
    ),
    Breakage(
        "subnet-public-ip",
        "nodes-no-public-ip",
        MANDATORY,
        None,
        edit=lambda c: c.get("aws:ec2/subnet:Subnet", "network-private-sa-east-1a").inputs.update(
            mapPublicIpOnLaunch=True
        ),
    ),
    Breakage(
        "cluster-public-ip",
        "nodes-no-public-ip",
        MANDATORY,
        None,
        edit=lambda c: EKS_CLUSTER(c).update(nodeAssociatePublicIpAddress=True),
    ),
    Breakage("nixl-ucx", "nixl-libfabric-on-efa", MANDATORY, None, edit=_set_nixl_backends(["UCX"])),
    Breakage("nixl-default-backend", "nixl-libfabric-on-efa", MANDATORY, None, edit=_set_nixl_backends(None)),
    Breakage(
        "decode-context",
        "prefill-decode-consistent",
        MANDATORY,
        "maxModelLen",
        edit=_on_decode(("engine_kwargs", "max_model_len"), 1024),
    ),
    Breakage(
        "decode-model",
        "prefill-decode-consistent",
        MANDATORY,
        "modelId",
        edit=_on_decode(("model_loading_config", "model_id"), "other-model"),
    ),
    Breakage(
        "same-engine-id",
        "prefill-decode-consistent",
        MANDATORY,
        None,
        edit=_on_decode(("engine_kwargs", "kv_transfer_config", "engine_id"), "prefill"),
    ),
    Breakage(
        "chart-no-version",
        "helm-charts-pinned",
        MANDATORY,
        "kuberayVersion",
        edit=lambda c: KUBERAY_RELEASE(c).pop("version"),
    ),
    Breakage(
        "chart-latest",
        "helm-charts-pinned",
        MANDATORY,
        "kuberayVersion",
        edit=lambda c: KUBERAY_RELEASE(c).update(version="latest"),
    ),
    Breakage(
        "chart-range",
        "helm-charts-pinned",
        MANDATORY,
        "kuberayVersion",
        edit=lambda c: KUBERAY_RELEASE(c).update(version="^1.4"),
    ),
    Breakage("image-latest", "images-pinned", MANDATORY, "dlcImage", edit=_set_worker_image("example.com/ray:latest")),
    Breakage("image-untagged", "images-pinned", MANDATORY, "dlcImage", edit=_set_worker_image("example.com:5000/ray")),
    *(
        Breakage(
            f"lb-{name}",
            "serve-endpoint-not-open",
            MANDATORY,
            "serveSourceCidrs",
            overrides=INTERNET_FACING,
            secret_keys=EXPOSED_SECRET_KEYS,
            edit=_set_ranges(ranges, SERVE_LB, "spec", "loadBalancerSourceRanges"),
        )
        for name, ranges in OPEN_TO_THE_INTERNET
    ),
    Breakage(
        "lb-no-ranges",
        "serve-endpoint-not-open",
        MANDATORY,
        "serveSourceCidrs",
        stack="prod",
        edit=_make_internet_facing_without_ranges,
    ),
    Breakage(
        "lb-no-certificate",
        "serve-endpoint-tls",
        MANDATORY,
        "serveCertificateArn",
        stack="prod",
        edit=lambda c: SERVE_LB(c)["metadata"]["annotations"].pop(TLS_CERT),
    ),
    Breakage(
        "lb-plain-port", "serve-endpoint-tls", MANDATORY, "serveCertificateArn", stack="prod", edit=_add_plain_port
    ),
    Breakage(
        "lb-tls-ports-elsewhere",
        "serve-endpoint-tls",
        MANDATORY,
        "serveCertificateArn",
        stack="prod",
        edit=lambda c: SERVE_LB(c)["metadata"]["annotations"].update({TLS_PORTS: "8443"}),
    ),
    *(
        Breakage(
            f"lb-tls-policy-{name}", "serve-endpoint-tls", MANDATORY, None, stack="prod", edit=_set_tls_policy(policy)
        )
        for name, policy in TLS_1_0_OR_1_1_POLICIES
    ),
    Breakage(
        "serve-service-no-certificate",
        "serve-endpoint-tls",
        MANDATORY,
        "serveCertificateArn",
        stack="prod",
        edit=_serve_service(internal=True, certificate=False),
    ),
    Breakage(
        "serve-service-tls-on-443-served-on-8000",
        "serve-endpoint-tls",
        MANDATORY,
        "serveCertificateArn",
        stack="prod",
        edit=_serve_service(internal=True, certificate=True, tls_ports="443"),
    ),
    Breakage(
        "serve-service-port-onto-the-dashboard",
        "load-balancers-serve-only",
        MANDATORY,
        None,
        stack="prod",
        edit=_serve_service(internal=False, certificate=True, tls_ports="8000", ports=SERVE_PORT_ONTO_DASHBOARD),
    ),
    Breakage(
        "serve-service-no-ranges",
        "serve-endpoint-not-open",
        MANDATORY,
        "serveSourceCidrs",
        stack="prod",
        edit=_serve_service(internal=False, certificate=True, tls_ports="8000", ranges=False),
    ),
    Breakage(
        "serve-service-no-keys",
        "serve-endpoint-authenticated",
        MANDATORY,
        "serveApiKeyAuth",
        stack="prod",
        overrides={"serveApiKeyAuth": False, "serveApiKeys": ""},
        also_fires=frozenset({"serve-endpoint-authenticated-internal"}),
        edit=_serve_service(internal=False, certificate=True, tls_ports="8000"),
    ),
    *(
        Breakage(
            f"lb-selects-{name}",
            "load-balancers-serve-only",
            MANDATORY,
            None,
            stack="prod",
            edit=lambda c, selector=selector: SERVE_LB(c)["spec"].update(selector=selector),
        )
        for name, selector in NOT_SERVING_SELECTORS
    ),
    *(
        Breakage(
            f"lb-targets-{name}",
            "load-balancers-serve-only",
            MANDATORY,
            None,
            stack="prod",
            edit=_set_target_port(port),
        )
        for name, port in NOT_SERVE_TARGETS
    ),
    Breakage(
        "head-service-load-balancer",
        "load-balancers-serve-only",
        MANDATORY,
        None,
        stack="prod",
        edit=_head_service_load_balancer,
    ),
    Breakage(
        "head-group-service-type-load-balancer",
        "load-balancers-serve-only",
        MANDATORY,
        None,
        stack="prod",
        edit=_set_head_group(serviceType="LoadBalancer"),
        # Both Services KubeRay makes of it are then load balancers with no annotation: internet-facing, open, plain.
        also_fires=frozenset({"serve-endpoint-not-open", "serve-endpoint-tls"}),
    ),
    Breakage("node-port-service", "no-node-port-services", MANDATORY, None, stack="prod", edit=_add_node_port_service),
    Breakage(
        "serve-service-node-port",
        "no-node-port-services",
        MANDATORY,
        None,
        edit=lambda c: RAYSERVICE(c)["spec"].update(serveService={"spec": {"type": "NodePort"}}),
    ),
    Breakage(
        "head-group-service-type-node-port",
        "no-node-port-services",
        MANDATORY,
        None,
        edit=_set_head_group(serviceType="NodePort"),
    ),
    Breakage(
        "internet-facing-no-keys",
        "serve-endpoint-authenticated",
        MANDATORY,
        "serveApiKeyAuth",
        overrides=INTERNET_FACING,
        secret_keys=EXPOSED_SECRET_KEYS,
        edit=_without_auth_ingress,
    ),
    Breakage(
        "internal-no-keys",
        "serve-endpoint-authenticated-internal",
        ADVISORY,
        "serveApiKeyAuth",
        stack="prod",
        overrides={"serveApiKeyAuth": False, "serveApiKeys": ""},
    ),
    Breakage(
        "api-key-in-a-plain-output",
        "credentials-not-in-outputs",
        MANDATORY,
        "serveApiKeys",
        overrides=INTERNET_FACING,
        secret_keys=EXPOSED_SECRET_KEYS,
        edit=_add_output("clientKey", lambda c: c.outputs["serveApiKey"]),
    ),
    Breakage(
        "hf-token-output",
        "credentials-not-in-outputs",
        MANDATORY,
        "hfToken",
        overrides={"hfToken": HF_TOKEN},
        secret_keys=("hfToken",),
        edit=_add_output("hfToken", lambda _: HF_TOKEN),
    ),
    *(
        Breakage(
            f"reader-{name}",
            "worker-access-model-only",
            MANDATORY,
            None,
            edit=_widen_reader(change),
            also_fires=ADMINISTERS if name in WIDENINGS_TO_EVERYTHING else frozenset(),
        )
        for name, change in READER_WIDENINGS
    ),
    *(
        # Every route grants s3:* on everything or AdministratorAccess, which the IAM rule refuses for any role.
        Breakage(f"reader-route-{name}", "worker-access-model-only", MANDATORY, None, edit=edit, also_fires=ADMINISTERS)
        for name, edit in READER_ROUTES
    ),
    Breakage(
        "api-key-in-a-config-map",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        overrides=INTERNET_FACING,
        secret_keys=EXPOSED_SECRET_KEYS,
        edit=_add_config_map(data={"header": f"Authorization: Bearer {API_KEYS[0]}"}),
    ),
    Breakage(
        "hf-token-in-config-map-binary-data",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        overrides={"hfToken": HF_TOKEN},
        secret_keys=("hfToken",),
        edit=_add_config_map(binaryData={"hub.txt": base64.b64encode(HF_TOKEN.encode()).decode()}),
    ),
    Breakage(
        "credential-named-config-map-key",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        edit=_add_config_map(data={"OPENAI_API_KEY": FOREIGN_KEY}),
    ),
    Breakage(
        "hf-token-in-app-env-vars",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        overrides={"hfToken": HF_TOKEN},
        secret_keys=("hfToken",),
        edit=_set_app_env_vars(HUB_AUTH=HF_TOKEN),
    ),
    Breakage(
        "api-key-in-engine-env-vars",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        overrides=INTERNET_FACING,
        secret_keys=EXPOSED_SECRET_KEYS,
        edit=_set_engine_env_vars(UPSTREAM_AUTH=API_KEYS[1]),
    ),
    Breakage(
        "credential-named-engine-env-var",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        edit=_set_engine_env_vars(OPENAI_API_KEY=FOREIGN_KEY),
    ),
    Breakage(
        "hf-token-env-literal",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        edit=_add_worker_env("HF_TOKEN", HF_TOKEN),
    ),
    Breakage(
        "api-keys-in-ingress-kwargs",
        "credentials-in-secrets-only",
        MANDATORY,
        None,
        overrides=INTERNET_FACING,
        secret_keys=EXPOSED_SECRET_KEYS,
        edit=_keys_in_ingress_kwargs,
    ),
    Breakage(
        "kubeconfig-plain-output",
        "credentials-not-in-outputs",
        MANDATORY,
        None,
        edit=_add_output("clusterKubeconfig", lambda c: c.outputs["kubeconfig"]),
    ),
    *(
        Breakage(
            f"api-{name}",
            "eks-public-endpoint-restricted",
            ADVISORY,
            "apiPublicAccessCidrs",
            stack="prod",
            edit=_set_ranges(ranges, EKS_CLUSTER, "publicAccessCidrs"),
        )
        for name, ranges in OPEN_TO_THE_INTERNET
    ),
    Breakage(
        "logging-off",
        "eks-control-plane-logging",
        ADVISORY,
        "controlPlaneLogging",
        overrides={"controlPlaneLogging": False},
    ),
    Breakage("no-owner", "ownership-tags", ADVISORY, "owner", overrides={"owner": ""}),
    Breakage("no-cost-center", "ownership-tags", ADVISORY, "costCenter", overrides={"costCenter": ""}),
    Breakage(
        "untagged-vpc",
        "ownership-tags",
        ADVISORY,
        "owner",
        edit=lambda c: c.get("aws:ec2/vpc:Vpc", "network-vpc").inputs.pop("tags"),
    ),
    Breakage(
        "small-root-disk", "gpu-root-volume-size", ADVISORY, "gpuRootVolumeGiB", overrides={"gpuRootVolumeGiB": 80}
    ),
    Breakage(
        "no-root-mapping",
        "gpu-root-volume-size",
        ADVISORY,
        "gpuRootVolumeGiB",
        edit=lambda c: LAUNCH_TEMPLATE(c).pop("blockDeviceMappings"),
    ),
    *LEAST_PRIVILEGE_BREAKAGES,
]


def test_every_policy_has_a_breakage() -> None:
    assert {b.policy for b in BREAKAGES} == {p.name for p in POLICIES}


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda b: f"{b.policy}:{b.id}")
def test_breaking_the_stack_fires_the_policy(
    engine: OfflinePolicyEngine,
    shipped_runs: dict[str, StackRun],
    shipped_findings: dict[str, list[Violation]],
    breakage: Breakage,
) -> None:
    run = shipped_runs[breakage.stack]
    if breakage.overrides:
        run = run_stack(breakage.overrides, stack=breakage.stack, secret_keys=breakage.secret_keys)
    captured = CapturedStack.of(run, breakage.stack)
    if breakage.edit:
        breakage.edit(captured)

    violations = preview(engine, captured)

    caught = [v for v in violations if v.policy == breakage.policy]
    assert caught, f"{breakage.policy} did not fire"
    assert {v.level for v in caught} == {breakage.level}
    # Only this policy newly fires: each rule guards its own concern.
    assert fired(violations) - fired(shipped_findings[breakage.stack]) == {breakage.policy, *breakage.also_fires}
    for violation in caught:
        assert not violation.message.startswith("can't run"), violation.message
        assert violation.urn, "a violation points at a resource"
        if breakage.config_key:
            assert breakage.config_key in CONFIG_KEYS
            assert breakage.config_key in violation.message
        else:
            assert "no stack config" in violation.message


# --- the pack's own judgement of "open to the internet" ---


def test_the_program_refuses_an_open_set_with_the_packs_own_rule() -> None:
    """One home for "open to the internet": the settings import the pack's stdlib-only rule, not a copy of it."""
    assert program_rules.covers_the_internet is pack_internet.covers_the_internet
    assert program_kinds.IPV4_NOT_ON_THE_INTERNET is pack_internet.IPV4_NOT_ON_THE_INTERNET


def test_the_program_refuses_an_unpinned_image_with_the_packs_own_rule() -> None:
    """One home for "pinned image": dlcImage is judged by the rule the pack's images-pinned applies."""
    assert program_serving_rules.unpinned_image_reason is pack_pinning.unpinned_image_reason


@pytest.mark.parametrize(
    ("cidrs", "covered"),
    [
        (["::/0"], True),
        (["::/1", "8000::/1"], True),
        (["2000::/4", "3000::/4"], True),
        (["2001:db8::/32"], False),
        (["fc00::/7"], False),
    ],
)
def test_pack_judges_ipv6_on_the_global_unicast_space(cidrs: list[str], covered: bool) -> None:
    """IANA allocates all global unicast IPv6 from 2000::/3
    (https://www.iana.org/assignments/ipv6-address-space/ipv6-address-space.xhtml): covering it is everyone."""
    assert pack_internet.covers_the_internet(cidrs) is covered


def test_pack_ignores_ranges_it_cannot_parse() -> None:
    """A preview unknown or a typo admits no one by itself; the parsable rest is still judged."""
    assert not pack_internet.covers_the_internet([UNKNOWN_STRING_VALUE, "not-a-cidr", "0.0.0.0/1"])
    assert pack_internet.covers_the_internet([UNKNOWN_STRING_VALUE, *SPLIT_INTERNET])


@pytest.mark.parametrize(
    "name", ["HF_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "apiKey", "HFToken", "db-password", "keys"]
)
def test_a_credential_is_named_by_its_last_word(name: str) -> None:
    assert pack_governance.names_a_credential(name)


# The stack's own names (its env vars, the keys file's mount, its ConfigMaps' keys) and names that only mention one.
@pytest.mark.parametrize(
    "name",
    [
        "VLLM_SSM_CONV_STATE_LAYOUT",
        "MODEL_CACHE_URI",
        "api_keys_file",
        "ray_llm_eks_auth-0532b50e911b405c.zip",
        "pd-health.json",
        "model_mirror.py",
        "HF_TOKEN_PATH",
        "TOKENIZERS_PARALLELISM",
        "MAX_NUM_BATCHED_TOKENS",
        "monkey",
    ],
)
def test_a_name_that_goes_on_is_no_credential(name: str) -> None:
    assert not pack_governance.names_a_credential(name)


# --- the same rules on a real preview's view of pulumi-eks, and on preview unknowns ---


def _as_real_preview(captured: CapturedStack) -> None:
    """Reshapes the pulumi-eks components as a real preview shows them.

    The engine sees a remote component as the pulumi-eks plugin registers it, without inputs, and
    sees its children; the ones the rules read are the aws:eks Cluster and NodeGroup.
    """
    cluster = captured.get("eks:index:Cluster", "cluster-eks")
    cluster_child = Resource(
        type="aws:eks/cluster:Cluster",
        name="cluster-eks-eksCluster",
        urn=f"{cluster.urn}$aws:eks/cluster:Cluster::eks-eksCluster",
        inputs={
            "vpcConfig": {
                "endpointPublicAccess": cluster.inputs["endpointPublicAccess"],
                "endpointPrivateAccess": cluster.inputs["endpointPrivateAccess"],
                "publicAccessCidrs": cluster.inputs["publicAccessCidrs"],
                "subnetIds": [UNKNOWN_STRING_VALUE],
            },
            "enabledClusterLogTypes": cluster.inputs["enabledClusterLogTypes"],
            "tags": cluster.inputs["tags"],
        },
        parent=cluster.urn,
        dependencies=(),
        provider="",
        custom=True,
    )
    children = [cluster_child]
    for group in captured.resources:
        if group.type == "eks:index:ManagedNodeGroup":
            inputs = {k: v for k, v in group.inputs.items() if k not in ("cluster", "nodeRole")}
            children.append(
                dataclasses.replace(
                    group,
                    type="aws:eks/nodeGroup:NodeGroup",
                    name=f"{group.name}-nodeGroup",
                    urn=f"{group.urn}$aws:eks/nodeGroup:NodeGroup::{group.name}-nodeGroup",
                    inputs=inputs,
                    parent=group.urn,
                    custom=True,
                )
            )
    for component in [cluster, *(r for r in captured.resources if r.type == "eks:index:ManagedNodeGroup")]:
        captured.replace(component.type, component.name, inputs={})
    captured.resources.extend(children)


NODE_GROUP_CHILD = _inputs("aws:eks/nodeGroup:NodeGroup", "gpu-nodes-gpu-nodeGroup")
CLUSTER_CHILD = _inputs("aws:eks/cluster:Cluster", "cluster-eks-eksCluster")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (None, set()),
        (lambda c: NODE_GROUP_CHILD(c)["subnetIds"].append("network-private-us-east-1a-id"), {"gpu-nodes-single-az"}),
        (_set_interfaces(interfaceType="interface"), {"gpu-nodes-efa"}),
        (lambda c: CLUSTER_CHILD(c).update(enabledClusterLogTypes=[]), {"eks-control-plane-logging"}),
        (lambda c: CLUSTER_CHILD(c)["vpcConfig"].pop("publicAccessCidrs"), {"eks-public-endpoint-restricted"}),
        (
            lambda c: CLUSTER_CHILD(c)["vpcConfig"].update(publicAccessCidrs=SPLIT_INTERNET),
            {"eks-public-endpoint-restricted"},
        ),
        (lambda c: CLUSTER_CHILD(c)["tags"].pop("owner"), {"ownership-tags"}),
    ],
    ids=["passes", "two-subnets", "no-efa", "logging-off", "default-cidrs", "split-internet-cidrs", "no-owner-tag"],
)
def test_rules_read_pulumi_eks_children_as_a_real_preview_shows_them(
    engine: OfflinePolicyEngine,
    prod: StackRun,
    edit: Callable[[CapturedStack], None] | None,
    expected: set[str],
) -> None:
    captured = CapturedStack.of(prod, "prod")
    _as_real_preview(captured)
    if edit:
        edit(captured)
    assert fired(preview(engine, captured)) == expected


def test_nixl_backend_is_free_without_efa(engine: OfflinePolicyEngine, dev: StackRun) -> None:
    """LIBFABRIC is required only where EFA is on: nodes without EFA and workers asking for none."""
    captured = CapturedStack.of(dev, "dev")
    _set_interfaces(interfaceType="interface")(captured)
    _set_nixl_backends(["UCX"])(captured)
    for worker in RAYSERVICE(captured)["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        for container in worker["template"]["spec"]["containers"]:
            for quantities in container["resources"].values():
                quantities.pop("vpc.amazonaws.com/efa", None)  # the Ray container's; the edge beside it asks none
    assert "nixl-libfabric-on-efa" not in fired(preview(engine, captured))


def test_gpu_node_group_without_launch_template_child_fires_efa(engine: OfflinePolicyEngine, prod: StackRun) -> None:
    captured = CapturedStack.of(prod, "prod")
    _as_real_preview(captured)
    child = captured.get("aws:eks/nodeGroup:NodeGroup", "gpu-nodes-gpu-nodeGroup")
    captured.replace(child.type, child.name, dependencies=())
    assert "gpu-nodes-efa" in fired(preview(engine, captured))


def test_an_attachment_whose_arn_is_unknown_is_named_so(engine: OfflinePolicyEngine, prod: StackRun) -> None:
    """A first preview may not know an attached policy's ARN (another resource's output); the message says that."""
    captured = CapturedStack.of(prod, "prod")
    role = captured.get("aws:iam/role:Role", "model-cache-reader")
    attachment = {"role": "model-cache-reader", "policyArn": UNKNOWN_STRING_VALUE}
    _add_resource(captured, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "extra", attachment, (role.urn,))
    (message,) = [v.message for v in preview(engine, captured) if v.policy == "worker-access-model-only"]
    assert "managed policy attached (ARN unknown until the update)" in message


def test_preview_unknowns_do_not_stop_the_rules(engine: OfflinePolicyEngine, prod: StackRun) -> None:
    """In a first preview, ids and computed outputs are unknown; the rules still decide."""
    captured = CapturedStack.of(prod, "prod")
    group = GPU_NODE_GROUP(captured)
    group["subnetIds"] = [UNKNOWN_STRING_VALUE]
    group["launchTemplate"] = {"id": UNKNOWN_STRING_VALUE, "version": UNKNOWN_STRING_VALUE}
    for interface in LAUNCH_TEMPLATE(captured)["networkInterfaces"]:
        interface["securityGroups"] = [UNKNOWN_STRING_VALUE, UNKNOWN_STRING_VALUE]
    captured.outputs["kubeconfig"] = UNKNOWN_STRING_VALUE
    assert preview(engine, captured) == []


def test_remote_write_to_amp_passes(engine: OfflinePolicyEngine) -> None:
    """The remote-write role (observability with ampWorkspaceUrl) is held to the same policies."""
    workspace = "https://aps-workspaces.sa-east-1.amazonaws.com/workspaces/ws-1a2b3c4d/"
    run = run_stack({"ampWorkspaceUrl": workspace}, stack="dev")
    assert run.get("aws:iam/role:Role", "observability-remote-write")
    assert preview(engine, CapturedStack.of(run, "dev")) == []


def test_pack_and_program_name_the_same_auth_ingress_and_tls_annotations() -> None:
    """The pack cannot import infra/: the names it looks for are held to the ones the program writes."""
    from infra.serving import rayservice, serve_auth
    from policy.ray_llm_policies import services as pack_services
    from policy.ray_llm_policies import serving as pack_serving

    assert pack_serving.AUTH_INGRESS_CLS == serve_auth.INGRESS_CLS
    assert pack_services.SERVE_LABEL == rayservice.SERVE_LABEL
    assert pack_services.DEFAULT_SERVE_PORT == rayservice.SERVE_PORT
    for annotation in ("TLS_CERT_ANNOTATION", "TLS_PORTS_ANNOTATION", "TLS_POLICY_ANNOTATION"):
        assert getattr(pack_serving, annotation) == getattr(rayservice, annotation)


def test_the_stacks_tls_policy_is_one_the_pack_allows() -> None:
    from infra.serving import rayservice
    from policy.ray_llm_policies import serving as pack_serving

    assert rayservice.TLS_POLICY in pack_serving.TLS_1_2_POLICIES


def test_pack_and_program_agree_on_the_one_host_path_and_capability() -> None:
    """The pack cannot import infra/: its copies of the compile cache's host path and EFA's capability are the
    ones the workers' template carries."""
    from infra.kube.scheduling import VLLM_CACHE_HOST_PATH
    from policy.ray_llm_policies import least_privilege
    from tests.rayservice_parts import ray_container, worker_group

    assert least_privilege.ALLOWED_HOST_PATHS == {VLLM_CACHE_HOST_PATH}
    container = ray_container(worker_group(run_stack())["template"]["spec"])
    assert set(container["securityContext"]["capabilities"]["add"]) == least_privilege.ALLOWED_ADDED_CAPABILITIES


def test_a_stack_of_several_models_with_adapters_passes(engine: OfflinePolicyEngine) -> None:
    """The pair nested under the several-model builder's pd_config is still checked side by side, and the workers'
    role reading the adapters' prefix reads what the serve config names (docs/models.md)."""
    listed = [
        {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"},
        {"id": "tuned", "source": "Qwen/Qwen3.5-9B", "serving": "aggregated", "adapters": ["sql"], "maxNumSeqs": 32},
    ]
    run = run_stack({"models": json.dumps(listed)})
    assert preview(engine, CapturedStack.of(run, "dev")) == []
