"""Issue 36: the Ray head's GCS fault tolerance as the stack declares it (headFaultTolerance), read against the
systems that act on it: KubeRay's vendored source, pulumi-aws's ElastiCache arguments, the dependency graph that
orders `pulumi destroy`, and a running stack's next `pulumi up`. What Ray does with the store is measured on CPU in
lab/tests/test_head_restart.py and tests/test_gcs_redis_tls.py; docs/head-fault-tolerance.md has every fact's source."""

from __future__ import annotations

import base64
import hashlib
import re
import warnings
from pathlib import PurePosixPath

import pytest
from cryptography import x509
from cryptography.utils import CryptographyDeprecationWarning
from cryptography.x509.oid import NameOID

from infra.observability.alerts import AlertArgs, alert_rules
from infra.serving.gcs_store import AUTH_TOKEN_LENGTH, PORT, multi_az
from infra.serving.rayservice import (
    GCS_REDIS_CA_CONFIG_MAP,
    GCS_REDIS_PASSWORD_KEY,
    GCS_REDIS_SECRET,
    GCS_REDIS_SERVICE,
    gcs_redis_ca_bundle,
)
from infra.serving.rayservice_drain import DrainRefused, DrainTimeout, await_drained, remaining
from infra.serving.rollout_status import WAITING, ClusterRefused, current_verdict, head_state
from infra.settings.table import MAINTENANCE_WINDOW_PATTERN, SETTINGS_BY_KEY, maintenance_window_minutes
from tests.conftest import rejection
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, rayservice
from tests.rollout_states import rayservice_status, restarting_head, running_head
from tests.schemas import core_object_errors
from tools.offline import StackRun, run_stack

GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECRET = "kubernetes:core/v1:Secret"
SERVICE = "kubernetes:core/v1:Service"
DRAIN = "pulumi-python:dynamic/ray-llm-eks:RayServiceDrain"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
FINALIZER = "ray.io/gcs-ft-redis-cleanup-finalizer"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
# https://www.amazontrust.com/repository/: Amazon Root CA 1's SHA-256 fingerprint.
AMAZON_ROOT_CA_1 = "8ecde6884f3d87b1125ba31ac3fcb13d7016de7f57cc904fe1cb97c6ae98196e"


@pytest.fixture(scope="module")
def without_ft() -> StackRun:
    return run_stack({"headFaultTolerance": "off"})


def cluster_config(run: StackRun) -> dict:
    return rayservice(run)["spec"]["rayClusterConfig"]


# --- the store ---


def test_the_store_is_valkey_with_tls_an_auth_token_and_a_replica_that_takes_over(dev):
    """pulumi-aws elasticache/replication_group.py: auth_token "can be specified only if transit_encryption_enabled";
    automatic failover and Multi-AZ need num_cache_clusters of 2 or more. Ray's GCS ends itself when Redis stops
    answering, so the store fails over rather than waits (docs/head-fault-tolerance.md)."""
    group = dev.get(GROUP, "gcs-store-valkey").inputs
    assert group["engine"] == "valkey"
    assert group["transitEncryptionEnabled"] is True
    assert group["atRestEncryptionEnabled"] is True
    assert group["numCacheClusters"] == 2
    assert group["automaticFailoverEnabled"] is True
    assert len(group["authToken"]) == AUTH_TOKEN_LENGTH and group["authToken"].isalnum()
    assert group["port"] == PORT


def test_the_store_spans_two_azs_where_the_vpc_has_them(dev):
    """dev's VPC has its AZs' private subnets; Multi-AZ puts the replica in another AZ than the primary
    (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/AutoFailover.html)."""
    subnets = dev.get("aws:elasticache/subnetGroup:SubnetGroup", "gcs-store-subnets").inputs["subnetIds"]
    assert len(subnets) >= 2
    assert dev.get(GROUP, "gcs-store-valkey").inputs["multiAzEnabled"] is True


def test_multi_az_needs_a_second_subnet():
    """Multi-AZ needs the replica in another AZ (the stack's VPC always has two: EKS needs them, maxAzs >= 2)."""
    assert (multi_az(1), multi_az(2)) == (False, True)


def test_destroy_leaves_no_snapshot(dev):
    """No final snapshot without final_snapshot_identifier, no backups at snapshot_retention_limit 0 (pulumi-aws
    replication_group.py): the tables of a deleted cluster are worthless."""
    group = dev.get(GROUP, "gcs-store-valkey").inputs
    assert "finalSnapshotIdentifier" not in group
    assert group["snapshotRetentionLimit"] == 0


def test_the_store_is_patched_in_a_window_of_the_stacks_choosing(dev):
    """ElastiCache applies its maintenance in the group's weekly window, and a patch fails the primary over: a head
    restart. Without `maintenance_window` ElastiCache "assigns a 60-minute maintenance window ... on a randomly chosen
    day of the week" (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/maintenance-window.html)."""
    window = dev.get(GROUP, "gcs-store-valkey").inputs["maintenanceWindow"]
    assert window == SETTINGS_BY_KEY["gcsRedisMaintenanceWindow"].default
    assert MAINTENANCE_WINDOW_PATTERN.fullmatch(window)
    assert maintenance_window_minutes(window) >= 60


def test_the_maintenance_window_is_the_one_set_across_the_weeks_end_too():
    run = run_stack({"gcsRedisMaintenanceWindow": "sat:23:30-sun:00:30"})
    assert run.get(GROUP, "gcs-store-valkey").inputs["maintenanceWindow"] == "sat:23:30-sun:00:30"


@pytest.mark.parametrize(
    ("window", "why"),
    [
        ("sun:06:00-sun:06:59", "it lasts 59 minutes"),
        ("sun:06:00-sun:06:00", "it lasts 0 minutes"),
        ("sun:24:00-mon:01:00", "allowed is ddd:hh24:mi-ddd:hh24:mi"),
        ("Sun:06:00-Sun:07:00", "allowed is ddd:hh24:mi-ddd:hh24:mi"),
        ("sun:06:00", "allowed is ddd:hh24:mi-ddd:hh24:mi"),
        ("sunday:06:00-sunday:07:00", "allowed is ddd:hh24:mi-ddd:hh24:mi"),
    ],
)
def test_a_window_elasticache_refuses_is_refused_first_naming_key_value_and_rule(window, why):
    """The form is ddd:hh24:mi-ddd:hh24:mi with ddd one of sun..sat, and "The minimum maintenance window is a 60
    minute period" (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html
    PreferredMaintenanceWindow; terraform-provider-aws internal/verify/validate.go ValidOnceAWeekWindowFormat)."""
    (problem,) = rejection({"gcsRedisMaintenanceWindow": window}).problems
    assert problem.startswith(f"gcsRedisMaintenanceWindow={window!r} is invalid")
    assert why in problem
    assert "at least 60 minutes" in problem


def test_the_auth_token_is_secret_wherever_it_goes(dev):
    assert "authToken" in dev.get(GROUP, "gcs-store-valkey").secret_inputs
    secret = dev.get(SECRET, "serving-gcs-redis-password")
    assert "stringData" in secret.secret_inputs
    assert secret.inputs["stringData"] == {
        GCS_REDIS_PASSWORD_KEY: dev.get(GROUP, "gcs-store-valkey").inputs["authToken"]
    }
    outputs = repr({k: v for k, v in dev.outputs.items() if k not in dev.secret_outputs})
    assert dev.get(GROUP, "gcs-store-valkey").inputs["authToken"] not in outputs


def test_only_the_system_nodes_reach_the_store(dev):
    """The store's group admits its port from the system nodes' own group and nothing else; the GPU nodes (which run
    the model's code) do not carry that group."""
    (rule,) = dev.get(SECURITY_GROUP, "gcs-store-clients").inputs["ingress"]
    system_group = dev.get(SECURITY_GROUP, "system-nodes-system-nodes")
    assert (rule["protocol"], rule["fromPort"], rule["toPort"]) == ("tcp", PORT, PORT)
    assert rule["securityGroups"] == [f"{system_group.name}-id"]
    assert "cidrBlocks" not in rule and "self" not in rule
    gpu_template = dev.get(LAUNCH_TEMPLATE, "gpu-nodes-gpu").inputs
    gpu_groups = {g for interface in gpu_template["networkInterfaces"] for g in interface["securityGroups"]}
    assert f"{system_group.name}-id" not in gpu_groups


def test_the_system_nodes_keep_the_cluster_group_beside_their_own(dev):
    """EKS adds the cluster security group only to a launch template that names none: "If you specify custom
    security groups in the launch template ... Amazon EKS doesn't add the cluster security group"
    (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html)."""
    groups = dev.get(LAUNCH_TEMPLATE, "system-nodes-system").inputs["vpcSecurityGroupIds"]
    assert groups == ["sg-eks-cluster", "system-nodes-system-nodes-id"]


# --- the RayService ---


def test_the_head_names_the_store_by_a_fixed_address_and_the_password_by_reference(dev):
    options = cluster_config(dev)["gcsFaultToleranceOptions"]
    assert options == {
        "redisAddress": f"rediss://{GCS_REDIS_SERVICE}.inference.svc.cluster.local:{PORT}",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": GCS_REDIS_SECRET, "key": GCS_REDIS_PASSWORD_KEY}}},
    }


def test_the_head_trusts_the_ca_bundle_the_stack_ships_for_the_stores_tls(dev, without_ft):
    """Ray 2.58 reads no bundle file unless RAY_REDIS_CA_CERT names one, and a named file that is not there stops the
    head (measured: lab/tests/test_redis_tls.py), so the file is the stack's own: a key of a ConfigMap it declares
    beside the store, mounted on the head. KubeRay 1.4.0 refuses only RAY_REDIS_ADDRESS and REDIS_PASSWORD beside the
    options (vendor/kuberay-v1.4.0/validation.go), and its cleanup Job keeps the head pod's volumes and Ray container
    (lab/tests/test_kuberay_redis_cleanup.py): the Job finds the file too."""
    spec = cluster_config(dev)["headGroupSpec"]["template"]["spec"]
    (head,) = spec["containers"]
    assert {e["name"] for e in head["env"]}.isdisjoint({"RAY_REDIS_ADDRESS", "REDIS_PASSWORD"})
    ca_file = PurePosixPath(next(e["value"] for e in head["env"] if e["name"] == "RAY_REDIS_CA_CERT"))
    (mount,) = [m for m in head["volumeMounts"] if PurePosixPath(m["mountPath"]) == ca_file.parent]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    config_map = dev.get(CONFIG_MAP, "serving-gcs-redis-ca").inputs
    assert config_map["metadata"] == {"name": volume["configMap"]["name"], "namespace": "inference"}
    assert AMAZON_ROOT_CA_1 in sha256_fingerprints(config_map["data"][ca_file.name])
    (plain,) = cluster_config(without_ft)["headGroupSpec"]["template"]["spec"]["containers"]
    assert "env" not in plain
    assert GCS_REDIS_CA_CONFIG_MAP not in {r.inputs["metadata"]["name"] for r in without_ft.of_type(CONFIG_MAP)}


def sha256_fingerprints(pem: str) -> set[str]:
    """The SHA-256 fingerprints of a PEM file's certificates: the hash of each one's DER (RFC 7468 PEM: base64 of the
    DER between the BEGIN and END lines)."""
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", pem, re.DOTALL)
    return {hashlib.sha256(base64.b64decode("".join(block.split()))).hexdigest() for block in blocks}


def load_roots(pem: str) -> list[x509.Certificate]:
    """The certificates of a PEM file. Starfield Services Root CA - G2 has the serial number 0, which RFC 5280 section
    4.1.2.2 disallows and every TLS library (BoringSSL in Ray among them: lab/tests/test_redis_tls.py) and Mozilla's
    root
    store accept; cryptography only warns of it."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "Parsed a serial number which wasn't positive", CryptographyDeprecationWarning
        )
        return x509.load_pem_x509_certificates(pem.encode())


def test_the_shipped_cas_are_amazon_trust_services_roots():
    """ElastiCache's in-transit certificates chain to Amazon's root CAs (docs/head-fault-tolerance.md, "The store's
    CA"); the vendored files are Amazon Root CA 1 to 4 (Amazon Root CA 1 by the SHA-256 fingerprint
    https://www.amazontrust.com/repository/ publishes) and the Starfield root that cross-signs them, each self-signed,
    a CA, and valid past the end of 2037."""
    certificates = load_roots(gcs_redis_ca_bundle())
    names = sorted(c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value for c in certificates)
    assert names == [
        "Amazon Root CA 1",
        "Amazon Root CA 2",
        "Amazon Root CA 3",
        "Amazon Root CA 4",
        "Starfield Services Root Certificate Authority - G2",
    ]
    for certificate in certificates:
        assert certificate.issuer == certificate.subject
        assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert certificate.not_valid_after_utc.year >= 2037
    assert AMAZON_ROOT_CA_1 in sha256_fingerprints(gcs_redis_ca_bundle())


def test_the_address_is_an_alias_of_the_primary_endpoint(dev):
    """An ExternalName Service is a CNAME of its externalName in the cluster's DNS
    (https://kubernetes.io/docs/concepts/services-networking/service/#externalname); the primary endpoint follows a
    failover."""
    service = dev.get(SERVICE, "serving-gcs-redis-address").inputs
    assert service["metadata"] == {"name": GCS_REDIS_SERVICE, "namespace": "inference"}
    assert service["spec"]["type"] == "ExternalName"
    endpoint = service["spec"]["externalName"]
    assert endpoint.startswith("master.") and endpoint.endswith(".sae1.cache.amazonaws.com")


def test_every_stack_keeps_the_head_out_of_the_serve_service(dev, without_ft):
    """The head's proxy dies with it and answers again only after the controller is back, FT or not."""
    assert rayservice(dev)["spec"]["excludeHeadPodFromServeSvc"] is True
    assert rayservice(without_ft)["spec"]["excludeHeadPodFromServeSvc"] is True


def test_off_declares_no_store_and_no_options(without_ft):
    assert without_ft.of_type(GROUP) == []
    assert [r for r in without_ft.of_type(SECRET) if r.name == "serving-gcs-redis-password"] == []
    assert [r for r in without_ft.of_type(SERVICE) if r.name == "serving-gcs-redis-address"] == []
    assert "gcsFaultToleranceOptions" not in cluster_config(without_ft)


# --- config ---


def test_an_operator_older_than_the_options_is_refused():
    """KubeRay takes spec.gcsFaultToleranceOptions from 1.3.0 (docs/head-fault-tolerance.md); an older CRD prunes the
    field and the head would run without its store."""
    message = str(rejection({"kuberayVersion": "1.2.2", "allowUnvalidatedKuberayVersion": True}))
    assert "headFaultTolerance='redis' is invalid with kuberayVersion='1.2.2'" in message
    assert "headFaultTolerance 'off'" in message


def test_a_node_type_that_is_not_elasticaches_is_refused():
    message = str(rejection({"gcsRedisNodeType": "t4g.micro"}))
    assert "gcsRedisNodeType='t4g.micro' is invalid" in message
    assert "cache.t4g.micro" in message


# --- the alerts ---


def alert(rules: list[dict], name: str) -> dict:
    (found,) = [rule for rule in rules if rule["alert"] == name]
    return found


def test_a_head_restart_pages_only_without_the_store():
    """With the store the workers ride through a head restart (measured: lab/tests/test_head_restart.py); without it
    every GPU worker restarts and loads the model again."""
    args = AlertArgs("llm", "inference", 2.0, 2700)
    with_store = alert(alert_rules(AlertArgs(**{**args.__dict__, "head_fault_tolerance": True})), "RayHeadRestarted")
    without = alert(alert_rules(args), "RayHeadRestarted")
    assert (with_store["labels"]["severity"], without["labels"]["severity"]) == ("warning", "critical")


def test_the_rendered_rule_says_what_the_stack_has(dev, without_ft):
    def severity(run: StackRun) -> str:
        (rule,) = run.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
        rules = rule.inputs["spec"]["groups"][0]["rules"]
        return str(alert(rules, "RayHeadRestarted")["labels"]["severity"])

    assert (severity(dev), severity(without_ft)) == ("warning", "critical")


# --- pulumi destroy: the drain between the RayService and what deleting its clusters needs ---


def test_the_rayservice_waits_for_the_drain(dev):
    assert dev.get(DRAIN, "serving-rayservice-drain").urn in dev.get(RAYSERVICE, "serving-rayservice").dependencies


@pytest.mark.parametrize(
    ("type_", "name"),
    [
        (RELEASE, "serving-kuberay-kuberay-operator"),
        (NAMESPACE, "serving-namespace"),
        (SECRET, "serving-gcs-redis-password"),
        (SERVICE, "serving-gcs-redis-address"),
        (CONFIG_MAP, "serving-gcs-redis-ca"),
    ],
)
def test_the_drain_is_deleted_before_what_kuberays_cleanup_needs(dev, type_, name):
    """Pulumi deletes a resource before what it depends on ("we must process deletes in reverse (so we don't delete
    resources upon which other resources depend)", pulumi/pulumi pkg/resource/deploy/step_generator.go
    ScheduleDeletes), so the drain (deleted after the RayService) goes before
    the operator that removes the finalizers, the namespace, and the store's password, CA and address its cleanup Job
    reads."""
    assert dev.get(type_, name).urn in dev.get(DRAIN, "serving-rayservice-drain").dependencies


def test_the_store_itself_goes_after_its_address_and_password(dev):
    """Their inputs are the store's outputs (the endpoint, the token): the engine deletes them first, and so the
    drain before the store."""
    token = dev.get("random:index/randomPassword:RandomPassword", "gcs-store-auth-token").urn
    assert token in dev.get(SECRET, "serving-gcs-redis-password").dependencies
    assert dev.get(GROUP, "gcs-store-valkey").urn in dev.get(SERVICE, "serving-gcs-redis-address").dependencies


def test_the_drain_keeps_the_kubeconfig_for_its_delete_as_a_secret(dev):
    drain = dev.get(DRAIN, "serving-rayservice-drain")
    assert "kubeconfig" in drain.secret_inputs


class FakeCluster:
    """The API's answers, poll after poll: the RayService, then its RayClusters."""

    def __init__(self, polls: list[tuple[dict | None, list[dict]]]) -> None:
        self.polls = polls
        self.index = -1

    def rayservice(self):
        self.index = min(self.index + 1, len(self.polls) - 1)
        return self.polls[self.index][0]

    def rayclusters_of_rayservice(self):
        return {"items": self.polls[self.index][1]}


def cluster(name: str, *finalizers: str) -> dict:
    return {"metadata": {"name": name, "finalizers": list(finalizers)}}


def test_the_drain_waits_until_the_rayservice_and_its_clusters_are_gone():
    reader = FakeCluster(
        [
            ({"metadata": {"name": "ray-llm"}}, [cluster("ray-llm-abcde", FINALIZER)]),
            (None, [cluster("ray-llm-abcde", FINALIZER)]),
            (None, []),
        ]
    )
    heard: list[str] = []
    await_drained(reader, timeout_s=60, poll_s=1, clock=lambda: 0.0, sleep=lambda _s: None, report=heard.append)
    assert reader.index == 2
    assert heard[0] == (
        f"waiting for KubeRay to delete RayService ray-llm; RayCluster ray-llm-abcde (finalizers: {FINALIZER})"
    )


def test_the_drain_names_what_holds_at_its_deadline():
    reader = FakeCluster([(None, [cluster("ray-llm-abcde", FINALIZER)])])
    now = iter(range(0, 10_000, 100))
    with pytest.raises(DrainTimeout) as caught:
        await_drained(reader, timeout_s=600, poll_s=1, clock=lambda: float(next(now)), sleep=lambda _s: None)
    assert f"RayCluster ray-llm-abcde (finalizers: {FINALIZER})" in str(caught.value)
    assert "pulumi destroy" in str(caught.value)


def test_a_failed_read_is_asked_again():
    class Flaky(FakeCluster):
        def rayservice(self):
            if self.index < 0:
                self.index = 0
                raise ConnectionError("reset")
            return super().rayservice()

    reader = Flaky([(None, [])])
    await_drained(reader, timeout_s=60, poll_s=1, clock=lambda: 0.0, sleep=lambda _s: None)
    assert remaining(reader) == []


# --- a running stack's next `pulumi up` ---


def moved(before: StackRun, after: StackRun) -> set[tuple[str, str]]:
    inputs = {(r.type, r.name): r.inputs for r in before.resources}
    return {(r.type, r.name) for r in after.resources if inputs.get((r.type, r.name)) != r.inputs} | {
        key for key in inputs if key not in {(r.type, r.name) for r in after.resources}
    }


def test_turning_the_store_on_for_a_running_stack_makes_it_before_replacing_the_rayservice(without_ft):
    """The store, its address and password are created, then the RayService (replaced: its rayClusterConfig gains
    the options) waits for them: its dependencies name them."""
    after = run_stack({}, existing=without_ft)
    changed = moved(without_ft, after)
    assert (RAYSERVICE, "serving-rayservice") in changed
    assert (GROUP, "gcs-store-valkey") in changed
    assert "spec.rayClusterConfig" in after.get(RAYSERVICE, "serving-rayservice").replace_on_changes
    before_uid = without_ft.uids[without_ft.get(RAYSERVICE, "serving-rayservice").urn].uid
    assert after.uids[after.get(RAYSERVICE, "serving-rayservice").urn].uid != before_uid
    depends = set(after.get(DRAIN, "serving-rayservice-drain").dependencies)
    assert after.get(SECRET, "serving-gcs-redis-password").urn in depends


def test_a_store_that_fails_to_create_leaves_the_running_rayservice(dev):
    """The RayService waits for the store (through the drain and the store's address): the SDK registers a resource
    only once what it depends on is created (pulumi runtime/resource.py prepare_resource; tests/deploy_graph.py),
    so a replacement's delete and create of the RayService are never reached when ElastiCache refuses the group."""
    from tests.deploy_graph import waits_for

    assert dev.get(GROUP, "gcs-store-valkey").urn in waits_for(dev, RAYSERVICE, "serving-rayservice")


def test_a_node_type_change_moves_the_store_alone(dev):
    after = run_stack({"gcsRedisNodeType": "cache.t4g.small"}, existing=dev)
    assert moved(dev, after) - {(ROLLOUT, "serving-rollout")} == {(GROUP, "gcs-store-valkey")}


# --- the rollout's wait while the head restarts ---

CLUSTER = "ray-llm-abcde"
HEAD = "ray-llm-abcde-head-x7k2p"


def test_the_waits_labels_are_the_stacks():
    from infra.kube.pod_labels import RAY_NODE_TYPE_LABEL
    from infra.serving import rayservice as stack_rayservice
    from infra.serving import rollout_status

    assert rollout_status.RAY_CLUSTER_LABEL == stack_rayservice.RAY_CLUSTER_LABEL
    assert rollout_status.NODE_TYPE_LABEL == RAY_NODE_TYPE_LABEL


def test_a_restarting_head_is_a_kubernetes_pod():
    assert core_object_errors(restarting_head(CLUSTER, HEAD, 2)) == []


def test_the_head_state_reads_the_ray_containers_restarts_and_last_exit():
    state = head_state({"items": [restarting_head(CLUSTER, HEAD, 2)]}, CLUSTER)
    assert (state.pod, state.ready, state.restarts, state.waiting) == (HEAD, False, 2, "CrashLoopBackOff")
    assert state.last_exit == "Error (exit 137) at 2026-12-06T10:04:05Z"
    assert head_state({"items": [running_head(CLUSTER, HEAD)]}, "ray-llm-other").pod == ""


class SilentHead:
    """A RayService whose active cluster's dashboard does not answer, and its pods."""

    def __init__(self, manifest: dict, pods: dict) -> None:
        self.manifest, self.pod_list = manifest, pods

    def rayservice(self):
        metadata = {**self.manifest["metadata"], "generation": 1}
        return {**self.manifest, "metadata": metadata, "status": rayservice_status(observed=1, active=CLUSTER)}

    def serve_details(self, cluster):
        return None

    def raycluster(self, cluster):
        return None

    def pods(self):
        return self.pod_list


def test_the_wait_says_the_head_restarts_and_that_the_workers_serve_on(dev):
    verdict = current_verdict(SilentHead(rayservice(dev), {"items": [restarting_head(CLUSTER, HEAD, 1)]}), [])
    assert verdict.state == WAITING
    assert f"head pod {HEAD} Running, not ready, restarted 1 time(s), last Error (exit 137)" in verdict.message
    assert "with GCS fault tolerance the GPU workers keep serving through it" in verdict.message


def test_without_the_store_the_wait_says_the_workers_restart(without_ft):
    reader = SilentHead(rayservice(without_ft), {"items": [restarting_head(CLUSTER, HEAD, 1)]})
    assert "every GPU worker restarts with it" in current_verdict(reader, []).message


def test_a_head_not_yet_started_is_no_restart(dev):
    pending = {**running_head(CLUSTER, HEAD), "status": {"phase": "Pending"}}
    message = current_verdict(SilentHead(rayservice(dev), {"items": [pending]}), []).message
    assert message == f"Ray's dashboard on RayCluster {CLUSTER} does not answer yet: head pod {HEAD} Pending, not ready"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_read_fails_the_drain_at_once_naming_the_refusal(status):
    """A 401 or 403 is the identity's credentials or RBAC (infra/serving/rollout.py REFUSED, as the rollout's wait
    treats it): polling for 15 minutes cannot change it, so the first refusal ends the drain, naming it."""

    class Refusing(FakeCluster):
        def rayservice(self):
            raise ClusterRefused(f"GET /apis/ray.io/v1/namespaces/inference/rayservices/ray-llm: HTTP {status} b'...'")

    def no_second_poll(_seconds: float) -> None:
        raise AssertionError("the drain polled again after a refusal")

    with pytest.raises(DrainRefused) as caught:
        await_drained(Refusing([(None, [])]), timeout_s=900, poll_s=5, clock=lambda: 0.0, sleep=no_second_poll)
    assert f"HTTP {status}" in str(caught.value)
    assert "pulumi destroy" in str(caught.value)
