"""What `pulumi preview` and `pulumi up` say about the stack before it changes anything (which tools.render prints):
what the stack costs, what a change costs, what guards Ray, where the alerts go, how to tear down.

Imports: infra.observability, infra.serving, infra.settings."""

from __future__ import annotations

import math

from infra.observability.receivers import Receivers
from infra.serving.gcs_store import CACHE_CLUSTERS
from infra.serving.rayservice import cluster_deletion_delay_s
from infra.serving.serve_config import PD_SIDES, longest_context
from infra.settings.autoscaling import WARM_ENGINE_START_S
from infra.settings.changes import (
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    SERVE_IN_PLACE,
    SERVE_NEW_CLUSTER,
    SURGE_DELETION_DELAY_S,
    SURGE_MINUTES_PER_GPU_NODE,
)
from infra.settings.cost import StackCost, stack_cost, stack_cost_note
from infra.settings.kinds import UNPROTECT_COMMAND
from infra.settings.prefix_caching import cache_rule
from infra.settings.stack_config import StackConfig

# A side's prefix caching (ServeSide.prefix_caching), as the note says it.
CACHE_STATES = {True: "on", False: "off", None: "as vLLM's default"}


def serving_notes(cfg: StackConfig) -> list[str]:
    """What the serving part's preview says: what a change costs, what guards Ray, what a head restart costs and
    where prefix caching and routing act."""
    notes = [cluster_change_path(cfg), ray_auth_note(cfg), head_fault_tolerance_note(cfg), prefix_caching_note(cfg)]
    routing_note = prefix_routing_note(cfg)
    return [*notes, routing_note] if routing_note else notes


def cost_note(cfg: StackConfig, azs: int) -> str:
    """What the stack costs an hour, a month and a million output tokens, at its fewest GPU nodes and, with
    serveAutoscaling, its most (infra/settings/cost.py)."""

    def cost(gpu_nodes: int) -> StackCost:
        store = (cfg.gcs_redis_node_type, CACHE_CLUSTERS if cfg.gcs_redis else 0)
        system = (cfg.system_node_type, cfg.system_node_count)
        nat = azs if cfg.nat_gateway_per_az else 1
        return stack_cost(cfg.region, (cfg.gpu_node_type, gpu_nodes), system, nat, store)

    most = cost(cfg.topology.most_gpu_nodes) if cfg.serve_autoscaling else None
    return stack_cost_note(cost(cfg.topology.gpu_nodes), most, cfg.decode.replicas)


def protection_note() -> str:
    """How a protected stack is torn down, said by `pulumi preview` and `pulumi up` while protectResources is on."""
    return (
        "protectResources=true: Pulumi protects the VPC and the cluster, and EKS deletion protection is on, so "
        f"`pulumi destroy` is refused; to tear down run `{UNPROTECT_COMMAND}` first (it lifts both; `pulumi state "
        "unprotect` lifts only Pulumi's), then `pulumi destroy`"
    )


def head_fault_tolerance_note(cfg: StackConfig) -> str:
    """What a Ray head restart costs this stack, said by `pulumi preview` and `pulumi up`."""
    if cfg.gcs_redis:
        return (
            f"headFaultTolerance='redis': the Ray head keeps the cluster's tables in an ElastiCache for Valkey primary "
            f"and replica ({cfg.gcs_redis_node_type}); a restarted head reloads them and the GPU workers keep serving "
            "through it, within their 600 s reconnect timeout (docs/head-fault-tolerance.md)"
        )
    return (
        "headFaultTolerance='off': a Ray head restart (its pod, its node, a system node roll) restarts every GPU "
        "worker, which loads the model again: minutes without answers (docs/head-fault-tolerance.md)"
    )


def cluster_change_path(cfg: StackConfig) -> str:
    """What a cluster-spec change costs this stack, said by `pulumi preview` and `pulumi up` (its diagnostics) beside
    the settings `pulumi preview --diff` shows under the effect's name."""
    if not cfg.new_cluster:
        return (
            "clusterUpgradeStrategy 'replace': a cluster-spec change (the settings under "
            f"`{RAYSERVICE_REPLACED.name}`) replaces the RayService, a full outage until the new cluster has loaded "
            f"the model; no extra nodes. An engine change (`{SERVE_IN_PLACE.name}`) rolls the running engines; a "
            "broken one is rolled back by the rollout itself, an outage of one engine start, and `pulumi up` fails "
            "naming it (docs/changes.md)"
        )
    minutes = surge_minutes(cfg)
    hours = cfg.surge_gpu_nodes * minutes / 60
    return (
        f"clusterUpgradeStrategy 'newCluster': a cluster-spec or engine change (the settings under "
        f"`{RAYSERVICE_NEW_CLUSTER.name}` and `{SERVE_NEW_CLUSTER.name}`) keeps serving and runs a second RayCluster "
        f"beside the active one: a second Ray head and {cfg.surge_gpu_nodes} more {cfg.gpu_node_type} GPU node(s), "
        f"about {minutes} minutes each, about {hours:.1f} extra GPU node-hours (modelled, "
        f"docs/changes.md)"
    )


def surge_minutes(cfg: StackConfig) -> int:
    """The modelled surge per GPU node, with this stack's deletion delay in place of the default stack's: the old
    cluster's nodes stay that long after the switch (a longer maxModelLen keeps them longer)."""
    return math.ceil(SURGE_MINUTES_PER_GPU_NODE + (cluster_deletion_delay_s(cfg) - SURGE_DELETION_DELAY_S) / 60)


def rollback_wait_warning(cfg: StackConfig) -> str | None:
    """With newCluster the GPU node group holds two clusters, and a rollback after a failed change builds a third: it
    waits for KubeRay to delete the failed one, after the deletion delay KubeRay 1.7.0 applies to every cluster it
    drops (vendor/kuberay-v1.7.0/rayservice_controller.go cleanUpRayClusterInstance), then starts its engines on the
    freed nodes (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster)."""
    delay_s = cluster_deletion_delay_s(cfg)
    wait_s = delay_s + WARM_ENGINE_START_S
    if not cfg.new_cluster or wait_s <= cfg.serve_ready_timeout_minutes * 60:
        return None
    minutes = math.ceil(wait_s / 60)
    context = longest_context(cfg.max_model_len, cfg.aggregated_models)
    return (
        f"clusterUpgradeStrategy 'newCluster': a rollback after a failed change waits about {minutes} minutes (the "
        f"failed cluster's deletion delay, {delay_s} s: the longest stream of a {context}-token context, then an "
        f"engine start on its freed GPU nodes), longer than serveReadyTimeoutMinutes "
        f"({cfg.serve_ready_timeout_minutes}): that `pulumi up` would fail at its deadline with the active cluster "
        f"still serving, and the next one finish it; set serveReadyTimeoutMinutes to {minutes} or more"
    )


def ray_auth_note(cfg: StackConfig) -> str:
    """What guards Ray's own ports, said by `pulumi preview` and `pulumi up`."""
    if cfg.ray_token_auth:
        return (
            "Ray's dashboard, Ray client and GCS ask for Ray's token (KubeRay authOptions, a generated Secret per "
            "RayCluster), inside the serving namespace's NetworkPolicies"
        )
    return (
        f"rayAuthMode={cfg.settings['rayAuthMode']!r}: Ray's token authentication is off with kuberayVersion="
        f"{cfg.kuberay_version!r} (KubeRay takes authOptions from 1.5.1 on), so Ray's dashboard, Ray client and GCS "
        "are guarded by the serving namespace's NetworkPolicies alone; kuberayVersion 1.7.0 turns the token on"
    )


def prefix_caching_note(cfg: StackConfig) -> str:
    """Which engines keep a prefix cache and why, said by `pulumi preview` and `pulumi up`."""
    mode = cfg.settings["prefixCaching"]
    sides = [
        f"{side} {CACHE_STATES[getattr(cfg, side).prefix_caching]} ({cache_rule(mode, side, cfg.model_hybrid)})"
        for side in PD_SIDES
    ]
    return f"prefixCaching={mode!r}: {'; '.join(sides)} (docs/prefix-caching.md)"


def prefix_routing_note(cfg: StackConfig) -> str | None:
    """Where prefixAwareRouting acts, and where it changes nothing; None when it is off."""
    if cfg.settings["prefixAwareRouting"] != "true":
        return None
    sides = []
    for name in PD_SIDES:
        side = getattr(cfg, name)
        if side.prefix_routing:
            sides.append(f"{name} routes by prefix over up to {side.most_replicas} replicas")
        elif side.prefix_caching is False:
            sides.append(f"{name} keeps no prefix cache: Serve's default router")
        else:
            sides.append(f"{name} has one replica: nothing to choose between, Serve's default router")
    changes = "" if cfg.prefix_routing else " changes nothing"
    return f"prefixAwareRouting=true{changes}: {'; '.join(sides)}"


def alerting_note(cfg: StackConfig, receivers: Receivers) -> str:
    """Where the alerts go and where their rules run, said by `pulumi preview` and `pulumi up`."""
    where = [
        name
        for name, value in (
            (f"SNS topic {cfg.alert_sns_topic_arn}", receivers.sns_topic_arn),
            ("Slack (alertSlackWebhookUrl)", receivers.slack_webhook_url),
            ("PagerDuty (alertPagerDutyRoutingKey)", receivers.pagerduty_routing_key),
        )
        if value is not None
    ]
    rules = "the alert rules run in the in-cluster Prometheus"
    if cfg.amp_workspace_url:
        rules += (
            ", not in the Amazon Managed Service for Prometheus workspace it remote-writes to "
            f"({cfg.amp_workspace_url}), which stores the metrics only"
        )
    if not where:
        return (
            f"{rules}; the alerts go nowhere: Alertmanager has only the chart's `null` receiver. Set alertSnsTopicArn, "
            "alertSlackWebhookUrl or alertPagerDutyRoutingKey (docs/observability.md)"
        )
    return f"{rules}; the alerts go to {', '.join(where)}"
