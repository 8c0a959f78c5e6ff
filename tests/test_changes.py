"""The change model (infra/settings/changes.py) is held to what the program declares when a setting changes: each
setting's effects allow exactly the resources that move, and docs/changes.md's table is generated from it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.observability.network_policy import monitoring_network_policies
from infra.serving.serve_app import cluster_spec_sha256
from infra.settings import changes
from infra.settings.changes import RAYSERVICE_REPLACED, SERVE_IN_PLACE
from infra.settings.kinds import NEW_CLUSTER
from infra.settings.table import CHANGE_EFFECTS, effects_of, settings_by_effect
from tests.conftest import API_KEYS, EXPOSED_SECRET_KEYS, SERVE_AUTOSCALING, exposed
from tests.conftest import NEW_CLUSTER as NEW_CLUSTER_STACK
from tests.rayservice_parts import RAYSERVICE, ROLLOUT, rayservice
from tools.change_reference import BEGIN_MARKER, END_MARKER, REFERENCE_PAGE, WRITE_COMMAND, markdown_table
from tools.offline import StackRun, run_stack
from tools.project import declared_config

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "eks:index:ManagedNodeGroup"
SECRET = "kubernetes:core/v1:Secret"
RELEASE = "kubernetes:helm.sh/v3:Release"
# Resources each effect may move (type, name); the rollout moves on every change, since its inputs carry the settings.
MOVES = {
    changes.NOTHING_RUNNING.name: set(),
    changes.SERVE_IN_PLACE.name: {(RAYSERVICE, "serving-rayservice")},
    changes.SERVE_NEW_CLUSTER.name: {(RAYSERVICE, "serving-rayservice")},
    changes.RAYSERVICE_REPLACED.name: {
        (RAYSERVICE, "serving-rayservice"),
        # Another RayService (rayServiceName, namespace) is another drain.
        ("pulumi-python:dynamic/ray-llm-eks:RayServiceDrain", "serving-rayservice-drain"),
        # A new dlcImage: the image pre-puller's pods restart on it, so each node pulls it beside the change.
        ("kubernetes:apps/v1:DaemonSet", "serving-image-prepull"),
        (SECRET, "serving-hf-token"),
        (SECRET, "serving-serve-api-keys"),
        ("kubernetes:core/v1:ConfigMap", "serving-serve-auth-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-prefix-router-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-autoscale-policy-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-models-builder-code"),
    },
    changes.SECRET_UPDATED.name: {(SECRET, "serving-hf-token")},
    # Updated in place (tests/test_new_cluster.py: the same uid), the same objects as a replacement.
    changes.RAYSERVICE_NEW_CLUSTER.name: {
        (RAYSERVICE, "serving-rayservice"),
        ("kubernetes:apps/v1:DaemonSet", "serving-image-prepull"),
        (SECRET, "serving-hf-token"),
        (SECRET, "serving-serve-api-keys"),
        ("kubernetes:core/v1:ConfigMap", "serving-serve-auth-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-prefix-router-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-autoscale-policy-code"),
        ("kubernetes:core/v1:ConfigMap", "serving-models-builder-code"),
    },
    # clusterUpgradeStrategy installs the Cluster Autoscaler's chart, with its IAM role; kuberayVersion moves the
    # operator's chart and the CRDs the stack applies before it.
    changes.CHART_ROLLED.name: {
        (RELEASE, "serving-kuberay-kuberay-operator"),
        ("pulumi-python:dynamic/ray-llm-eks:KubeRayCrds", "serving-kuberay-crds"),
        ("ray-llm-eks:nodes:ClusterAutoscaler", "cluster-autoscaler"),
        (RELEASE, "cluster-autoscaler-cluster-autoscaler"),
        ("aws:iam/role:Role", "cluster-autoscaler-role"),
        ("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy"),
    },
    changes.MODEL_MIRRORED.name: {
        ("ray-llm-eks:serving:ModelCache", "model-cache"),
        ("kubernetes:batch/v1:Job", "model-cache-mirror"),
        (SECRET, "model-cache-hf-token"),
        ("kubernetes:core/v1:ServiceAccount", "serving-worker-service-account"),
        *(
            (f"aws:iam/{kind}", f"model-cache-{role}")
            for kind in ("role:Role", "rolePolicy:RolePolicy")
            for role in ("reader", "mirror")
        ),
        *(
            (f"aws:s3/{kind}", "model-cache-bucket")
            for kind in (
                "bucket:Bucket",
                "bucketPublicAccessBlock:BucketPublicAccessBlock",
                "bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            )
        ),
        ("kubernetes:core/v1:Namespace", "model-cache-namespace"),
        ("kubernetes:core/v1:ServiceAccount", "model-cache-mirror"),
        ("kubernetes:core/v1:ConfigMap", "model-cache-script"),
    },
    changes.GCS_STORE.name: {
        ("ray-llm-eks:serving:GcsStore", "gcs-store"),
        ("aws:elasticache/replicationGroup:ReplicationGroup", "gcs-store-valkey"),
        ("aws:elasticache/subnetGroup:SubnetGroup", "gcs-store-subnets"),
        ("aws:ec2/securityGroup:SecurityGroup", "gcs-store-clients"),
        ("random:index/randomPassword:RandomPassword", "gcs-store-auth-token"),
        (SECRET, "serving-gcs-redis-password"),
        ("kubernetes:core/v1:Service", "serving-gcs-redis-address"),
        ("kubernetes:core/v1:ConfigMap", "serving-gcs-redis-ca"),
    },
    changes.KEYS_RELOADED.name: {(SECRET, "serving-serve-api-keys")},
    changes.LOAD_BALANCER.name: {("kubernetes:core/v1:Service", "serving-serve-load-balancer")},
    changes.GPU_NODES_SCALED.name: {(NODE_GROUP, "gpu-nodes-gpu")},
    changes.GPU_NODES_ROLLED.name: {(LAUNCH_TEMPLATE, "gpu-nodes-gpu")},
    changes.GPU_NODES_REPLACED.name: {(NODE_GROUP, "gpu-nodes-gpu"), (LAUNCH_TEMPLATE, "gpu-nodes-gpu")},
    # The AWS resources the settings tried here update in place (modelCacheRetainOnDestroy: the bucket's
    # force_destroy, a provider-side attribute, and its retain_on_delete option, which is state only).
    changes.AWS_IN_PLACE.name: {("aws:s3/bucket:Bucket", "model-cache-bucket")},
    changes.MONITORING.name: {
        ("ray-llm-eks:observability:Observability", "observability"),
        (RELEASE, "observability-kube-prometheus-stack"),
        (RELEASE, "observability-dcgm-exporter"),
        ("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "observability-prometheusrule-ray-llm-eks"),
        *(
            ("kubernetes:monitoring.coreos.com/v1:PodMonitor", f"observability-podmonitor-{name}")
            for name in ("ray-head", "ray-workers", "kuberay-operator")
        ),
        *(
            ("kubernetes:core/v1:ConfigMap", f"observability-configmap-dashboard-{name}")
            for name in ("ray-serve", "ray-serve-deployment", "ray-serve-llm", "dcgm-exporter", "pd-health")
        ),
        ("aws:iam/role:Role", "observability-remote-write"),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "observability-remote-write"),
        # The alert receivers: Alertmanager's role for SNS, the Secret of the Slack URL and PagerDuty key.
        ("aws:iam/role:Role", "observability-alertmanager"),
        ("aws:iam/rolePolicy:RolePolicy", "observability-alertmanager-sns"),
        (SECRET, "observability-alert-receivers"),
        # The namespace's own NetworkPolicies and its Pod Security labels (issue 51).
        *(
            (
                "kubernetes:networking.k8s.io/v1:NetworkPolicy",
                f"observability-network-policy-{policy['metadata']['name']}",
            )
            for policy in monitoring_network_policies()
        ),
        ("kubernetes:core/v1:NamespacePatch", "observability-namespace-monitoring-pod-security"),
    },
}
# A valid new value for each setting tried, as a user would change it in the stack file.
NEW_VALUES: dict[str, dict[str, Any]] = {
    "modelId": {"modelId": "qwen-next"},
    "modelSource": {"modelSource": "Qwen/Qwen3-8B"},
    "maxModelLen": {"maxModelLen": 8192},
    "prefillMaxNumSeqs": {"prefillMaxNumSeqs": 16},
    "decodeMaxNumSeqs": {"decodeMaxNumSeqs": 16},
    "prefillMaxNumBatchedTokens": {"prefillMaxNumBatchedTokens": 4096},
    "decodeMaxNumBatchedTokens": {"decodeMaxNumBatchedTokens": 4096},
    "prefillQuantization": {"prefillQuantization": "fp8"},
    "decodeQuantization": {"decodeQuantization": "fp8"},
    "kvCacheDtype": {"kvCacheDtype": "fp8"},
    "prefixCaching": {"prefixCaching": "on"},
    "prefillReplicas": {"prefillReplicas": 2},
    "decodeReplicas": {"decodeReplicas": 2},
    "dlcImage": {"dlcImage": "123456789012.dkr.ecr.sa-east-1.amazonaws.com/ray:serve-llm-2"},
    "gpuRootVolumeGiB": {"gpuRootVolumeGiB": 300},
    "serveReadyTimeoutMinutes": {"serveReadyTimeoutMinutes": 60},
    "quotaPreflight": {"quotaPreflight": False},
    "modelPreflight": {"modelPreflight": False},
    "modelCache": {"modelCache": False},
    "modelCacheRetainOnDestroy": {"modelCacheRetainOnDestroy": True},
    "observability": {"observability": False},
    "ttftP99ObjectiveMs": {"ttftP99ObjectiveMs": 1500},
    "ampWorkspaceUrl": {"ampWorkspaceUrl": "https://aps-workspaces.sa-east-1.amazonaws.com/workspaces/ws-1a2b3c4d/"},
    "alertSnsTopicArn": {"alertSnsTopicArn": "arn:aws:sns:sa-east-1:123456789012:ray-llm-alerts"},
    "runbookUrl": {"runbookUrl": "https://github.com/example/ray-llm-eks/blob/main/docs/runbook.md"},
    "headFaultTolerance": {"headFaultTolerance": "off"},
    # The release a stack pins to stay where it was: the operator, its CRDs, and Ray's token off (rayAuthMode auto).
    "kuberayVersion": {"kuberayVersion": "1.4.0"},
    "rayAuthMode": {"rayAuthMode": "disabled"},
    "gcsRedisNodeType": {"gcsRedisNodeType": "cache.t4g.small"},
    # dev's model as the list's PD entry and a second model on its own node.
    "models": {
        "models": json.dumps(
            [
                {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"},
                {"id": "small", "source": "Qwen/Qwen3-8B", "serving": "aggregated"},
            ]
        ),
    },
}


@pytest.fixture(scope="module")
def baseline(dev) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r.type, r.name): r.inputs for r in dev.resources}


def moved(baseline: dict, run: StackRun) -> set[tuple[str, str]]:
    after = {(r.type, r.name): r.inputs for r in run.resources}
    return {key for key in baseline.keys() | after.keys() if baseline.get(key) != after.get(key)}


def test_every_setting_has_its_effects():
    assert set(CHANGE_EFFECTS) == set(declared_config())


@pytest.mark.parametrize("key", sorted(NEW_VALUES))
def test_a_change_moves_only_what_its_effects_allow(baseline, key):
    run = run_stack(NEW_VALUES[key])
    allowed = {(ROLLOUT, "serving-rollout")}.union(*(MOVES[effect.name] for effect in CHANGE_EFFECTS[key]))
    assert moved(baseline, run) <= allowed


@pytest.fixture(scope="module")
def new_cluster_baseline() -> StackRun:
    return run_stack(NEW_CLUSTER_STACK)


@pytest.mark.parametrize("key", sorted(k for k in NEW_VALUES if RAYSERVICE_REPLACED in CHANGE_EFFECTS[k]))
def test_with_new_cluster_a_change_that_would_replace_moves_what_its_effects_allow(new_cluster_baseline, key):
    """clusterUpgradeStrategy newCluster: the same changes, each under the effects it has on that path
    (infra/settings/table.py effects_of), and the RayService the same object, updated (the mock keeps its uid)."""
    run = run_stack({**NEW_CLUSTER_STACK, **NEW_VALUES[key]}, existing=new_cluster_baseline)
    effects = effects_of(key, NEW_CLUSTER)
    allowed = {(ROLLOUT, "serving-rollout")}.union(*(MOVES[effect.name] for effect in effects))
    assert moved({(r.type, r.name): r.inputs for r in new_cluster_baseline.resources}, run) <= allowed
    urn = run.get(RAYSERVICE, "serving-rayservice").urn
    assert run.uids[urn].uid == new_cluster_baseline.uids[urn].uid
    assert RAYSERVICE_REPLACED not in effects


def test_switching_to_new_cluster_moves_what_the_strategys_effects_allow(new_cluster_baseline):
    before = run_stack({"systemNodeCount": 2})
    allowed = {(ROLLOUT, "serving-rollout")}.union(
        *(MOVES[effect.name] for effect in CHANGE_EFFECTS["clusterUpgradeStrategy"] if effect.name in MOVES)
    )
    assert moved({(r.type, r.name): r.inputs for r in before.resources}, new_cluster_baseline) <= allowed


@pytest.mark.parametrize("key", sorted(k for k in NEW_VALUES if RAYSERVICE_REPLACED not in CHANGE_EFFECTS[k]))
def test_a_change_kept_in_place_leaves_the_cluster_spec(dev, key):
    """Only a rayClusterConfig change replaces the RayService (infra/serving/serve_app.py REPLACE_ON_CHANGES): a setting
    whose effects say in place must not touch it."""
    before = rayservice(dev)["spec"]["rayClusterConfig"]
    assert rayservice(run_stack(NEW_VALUES[key]))["spec"]["rayClusterConfig"] == before


@pytest.mark.parametrize("key", sorted(k for k in NEW_VALUES if RAYSERVICE_REPLACED in CHANGE_EFFECTS[k]))
def test_a_change_said_to_replace_the_rayservice_does_change_its_cluster_spec(dev, key):
    before = rayservice(dev)["spec"]["rayClusterConfig"]
    assert rayservice(run_stack(NEW_VALUES[key]))["spec"]["rayClusterConfig"] != before


@pytest.mark.parametrize("key", sorted(k for k in NEW_VALUES if SERVE_IN_PLACE in CHANGE_EFFECTS[k]))
def test_a_serve_change_reaches_the_serve_config(dev, key):
    before = rayservice(dev)["spec"]["serveConfigV2"]
    assert rayservice(run_stack(NEW_VALUES[key]))["spec"]["serveConfigV2"] != before


def test_adding_a_token_replaces_a_hub_reading_rayservice_and_a_new_value_updates_only_the_secret():
    """A pod reads a Secret's value into its environment when it starts (Kubernetes docs, Secrets as environment
    variables: "If a container already consumes a Secret in an environment variable, a Secret update will not be
    seen by the container unless it is restarted"). Without the model cache the workers read the Hub with it."""
    hub = {"modelCache": False}
    first = run_stack({**hub, "hfToken": "hf_one"}, secret_keys=("hfToken",))
    second = run_stack({**hub, "hfToken": "hf_two"}, secret_keys=("hfToken",), existing=first)
    assert rayservice(first)["spec"]["rayClusterConfig"] != rayservice(run_stack(hub))["spec"]["rayClusterConfig"]
    assert moved({(r.type, r.name): r.inputs for r in first.resources}, second) == {(SECRET, "serving-hf-token")}


def test_with_the_model_cache_a_token_reaches_the_mirror_only(dev):
    """The workers read the stack's S3 copy and hold no token (issue 35); the mirror Job has its own Secret and has
    run already, so a new value moves that Secret alone, and the RayService is left as it is."""
    first = run_stack({"hfToken": "hf_one"}, secret_keys=("hfToken",))
    second = run_stack({"hfToken": "hf_two"}, secret_keys=("hfToken",), existing=first)
    assert rayservice(first)["spec"]["rayClusterConfig"] == rayservice(dev)["spec"]["rayClusterConfig"]
    assert moved({(r.type, r.name): r.inputs for r in first.resources}, second) == {(SECRET, "model-cache-hf-token")}


@pytest.mark.parametrize(
    ("key", "values"),
    [
        (
            "alertSlackWebhookUrl",
            ("https://hooks.slack.com/services/T0/B0/one", "https://hooks.slack.com/services/T0/B0/two"),
        ),
        ("alertPagerDutyRoutingKey", ("a" * 32, "b" * 32)),
    ],
)
def test_a_receiver_credential_moves_only_the_metrics_stack_and_a_new_value_only_its_secret(baseline, key, values):
    """Alertmanager reads the file at each notification (prometheus/alertmanager notify/slack/slack.go,
    notify/pagerduty/pagerduty.go `os.ReadFile`), so a new value is the Secret alone, with no restart."""
    first = run_stack({key: values[0]}, secret_keys=(key,))
    second = run_stack({key: values[1]}, secret_keys=(key,), existing=first)
    assert moved(baseline, first) <= {(ROLLOUT, "serving-rollout"), *MOVES[changes.MONITORING.name]}
    assert CHANGE_EFFECTS[key] == (changes.MONITORING,)
    assert moved({(r.type, r.name): r.inputs for r in first.resources}, second) == {
        (SECRET, "observability-alert-receivers")
    }


def test_the_rollout_groups_each_setting_under_its_most_severe_effect(dev):
    grouped = dev.get(ROLLOUT, "serving-rollout").inputs["changes"]
    assert grouped["serve-in-place"]["maxModelLen"] == "2048"
    assert grouped["rayservice-replaced"]["prefillReplicas"] == "1"
    assert grouped["stack-rebuilt"]["aws:region"] == "sa-east-1"
    assert sum(len(settings) for settings in grouped.values()) == len(CHANGE_EFFECTS)


def test_a_secret_setting_is_grouped_as_set_or_not_never_by_value():
    assert settings_by_effect({"hfToken": "[secret]"}) == {"rayservice-replaced": {"hfToken": "[secret]"}}


def test_a_change_shows_in_the_preview_under_its_effect(dev):
    """`pulumi preview --diff` prints a dynamic resource's changed inputs; the change sits under its group."""
    changed = run_stack({"maxModelLen": 8192}).get(ROLLOUT, "serving-rollout").inputs["changes"]
    before = dev.get(ROLLOUT, "serving-rollout").inputs["changes"]
    differing = {
        (group, key)
        for group in before
        for key in before[group]
        if before[group][key] != changed.get(group, {}).get(key)
    }
    assert differing == {("serve-in-place", "maxModelLen")}


def test_the_change_table_is_generated_from_the_change_model():
    """docs/changes.md's table; a stale one names the command that rewrites it, not a diff of the whole table."""
    page = REFERENCE_PAGE.read_text()
    if page[page.index(BEGIN_MARKER) : page.index(END_MARKER) + len(END_MARKER)] != markdown_table():
        pytest.fail(f"docs/changes.md's change table is stale: run {WRITE_COMMAND}", pytrace=False)


# Changes of the exposed endpoint's settings, from an exposed dev (tests/conftest.py `exposed`).
EXPOSED_CHANGES: dict[str, dict[str, Any]] = {
    "serveCertificateArn": exposed(
        serveCertificateArn="arn:aws:acm:sa-east-1:123456789012:certificate/11111111-2222-4333-8444-555555555555"
    ),
    "serveApiKeyAuth": {**exposed(serveApiKeyAuth=False), "serveApiKeys": ""},
    "serveExposure": exposed("internet-facing", serveSourceCidrs=["100.24.20.0/24"]),
    "serveApiKeys": exposed(serveApiKeys=[API_KEYS[1]]),
}


@pytest.fixture(scope="module")
def exposed_baseline() -> dict[tuple[str, str], dict[str, Any]]:
    return {(r.type, r.name): r.inputs for r in run_stack(exposed(), secret_keys=EXPOSED_SECRET_KEYS).resources}


@pytest.mark.parametrize("key", sorted(EXPOSED_CHANGES))
def test_an_exposed_endpoints_change_moves_only_what_its_effects_allow(exposed_baseline, key):
    overrides = EXPOSED_CHANGES[key]
    run = run_stack(overrides, secret_keys=EXPOSED_SECRET_KEYS if overrides["serveApiKeys"] else ())
    allowed = {(ROLLOUT, "serving-rollout")}.union(*(MOVES[effect.name] for effect in CHANGE_EFFECTS[key]))
    assert moved(exposed_baseline, run) <= allowed


def test_exposing_the_endpoint_replaces_the_rayservice_for_its_keys(dev):
    """The pods mount the keys and the auth code (infra/serving/rayservice.py serve_auth_volumes), a rayClusterConfig
    change (infra/serving/serve_app.py REPLACE_ON_CHANGES)."""
    run = run_stack(exposed(), secret_keys=EXPOSED_SECRET_KEYS)
    assert rayservice(run)["spec"]["rayClusterConfig"] != rayservice(dev)["spec"]["rayClusterConfig"]
    assert RAYSERVICE_REPLACED in CHANGE_EFFECTS["serveExposure"]


def test_a_replacement_is_said_to_be_a_full_outage_rolled_back_by_another_cold_start(dev):
    """The RayService is replaced delete-first (infra/serving/serve_app.py `delete_before_replace=True`, Pulumi's
    deleteBeforeReplace: "the old resource is deleted before the new one is created"), so it cannot keep serving with
    the replicas the stack has, and a failure leaves nothing to go back to in place."""
    assert dev.get(RAYSERVICE, "serving-rayservice").delete_before_replace
    assert RAYSERVICE_REPLACED.keeps_serving.startswith("no: a full outage")
    assert "another delete and a cold start" in RAYSERVICE_REPLACED.if_it_fails


def test_a_serve_config_change_is_said_to_keep_serving_with_two_a_side_and_to_roll_back_in_place():
    """With two replicas a side and two ingress replicas no request failed through a good change, with one a side
    Serve stops the old replica before the new one starts, and a failed config ends DEPLOY_FAILED with nothing
    serving (docs/serve-updates.md, lab/records/gpu-end-to-end.md "Updating a running app"); the cluster stays, so the
    rollback is the previous config sent to it."""
    assert SERVE_IN_PLACE.keeps_serving.startswith("yes with two or more replicas a side")
    assert "no with one replica a side" in SERVE_IN_PLACE.keeps_serving
    assert "roll back in place" in SERVE_IN_PLACE.if_it_fails


@pytest.mark.parametrize("effect", changes.ALL_EFFECTS, ids=lambda effect: effect.name)
def test_each_effect_says_whether_it_keeps_serving_and_how_it_rolls_back(effect):
    assert effect.keeps_serving.split(" ", 1)[0].rstrip(":") in ("yes", "no")
    assert effect.if_it_fails


def test_routing_by_prefix_moves_what_its_effects_allow_and_replaces_the_rayservice():
    """A side that starts routing by prefix names the stack's router, whose code the pods mount
    (infra/serving/prefix_routing.py): the serve config and the cluster spec change, and the router's ConfigMap
    comes."""
    cached = {"prefixCaching": "on", "prefillReplicas": 2}
    before, after = run_stack(cached), run_stack({**cached, "prefixAwareRouting": True})
    allowed = {(ROLLOUT, "serving-rollout")}.union(
        *(MOVES[effect.name] for effect in CHANGE_EFFECTS["prefixAwareRouting"])
    )
    assert moved({(r.type, r.name): r.inputs for r in before.resources}, after) <= allowed
    assert rayservice(after)["spec"]["rayClusterConfig"] != rayservice(before)["spec"]["rayClusterConfig"]
    assert rayservice(after)["spec"]["serveConfigV2"] != rayservice(before)["spec"]["serveConfigV2"]


@pytest.mark.parametrize("key", ["prefillTtftObjectiveMs", "decodeItlObjectiveMs"])
def test_a_first_latency_objective_moves_what_its_effects_allow_and_replaces_the_rayservice(key):
    """A side that starts scaling on a latency objective names the stack's policy, whose code the pods mount
    (infra/serving/serve_config.py AUTOSCALE_CODE): the serve config and the cluster spec change, and the policy's
    ConfigMap comes; another objective then changes the serve config alone."""
    before, after = run_stack(SERVE_AUTOSCALING), run_stack({**SERVE_AUTOSCALING, key: 5000})
    allowed = {(ROLLOUT, "serving-rollout")}.union(*(MOVES[effect.name] for effect in CHANGE_EFFECTS[key]))
    assert moved({(r.type, r.name): r.inputs for r in before.resources}, after) <= allowed
    assert rayservice(after)["spec"]["rayClusterConfig"] != rayservice(before)["spec"]["rayClusterConfig"]
    again = run_stack({**SERVE_AUTOSCALING, key: 6000})
    assert rayservice(again)["spec"]["rayClusterConfig"] == rayservice(after)["spec"]["rayClusterConfig"]
    assert rayservice(again)["spec"]["serveConfigV2"] != rayservice(after)["spec"]["serveConfigV2"]


@pytest.mark.parametrize(
    "key",
    sorted(
        k for k in NEW_VALUES if SERVE_IN_PLACE in CHANGE_EFFECTS[k] and RAYSERVICE_REPLACED not in CHANGE_EFFECTS[k]
    ),
)
def test_with_new_cluster_a_serve_change_takes_the_surge_path(new_cluster_baseline, key):
    """The serve settings say `serve-new-cluster` there, and do move the digest KubeRay hashes (the head template's
    annotation, lab/tests/test_kuberay_new_cluster.py): a new cluster beside the serving one, the RayService updated."""
    run = run_stack({**NEW_CLUSTER_STACK, **NEW_VALUES[key]}, existing=new_cluster_baseline)
    assert changes.SERVE_NEW_CLUSTER in effects_of(key, NEW_CLUSTER)
    assert SERVE_IN_PLACE not in effects_of(key, NEW_CLUSTER)
    assert cluster_spec_sha256(rayservice(run)) != cluster_spec_sha256(rayservice(new_cluster_baseline))
    urn = run.get(RAYSERVICE, "serving-rayservice").urn
    assert run.uids[urn].uid == new_cluster_baseline.uids[urn].uid
