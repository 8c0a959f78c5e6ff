"""The stack's settings as a table: one row per key, the one place a key is stated.

Each row gives the key's type, allowed values, default and description (Pulumi.yaml's `config` block and
docs/configuration.md are generated from the rows by `python -m tools.config_reference --write`), the `StackConfig`
field it feeds, and what changing it does (`infra/settings/changes.py`). Adding a key: a row here, the field it feeds
(and its consumer), then `--write`."""

from __future__ import annotations

from collections.abc import Mapping

from infra.settings.changes import (
    ALL_EFFECTS,
    RAYSERVICE_NEW_CLUSTER,
    RAYSERVICE_REPLACED,
    SERVE_IN_PLACE,
    SERVE_NEW_CLUSTER,
    Effect,
)
from infra.settings.kinds import NEW_CLUSTER, REPLACE, Setting
from infra.settings.rows_infrastructure import INFRASTRUCTURE
from infra.settings.rows_operations import OPERATIONS
from infra.settings.rows_serving import SERVING

# The table, by section (Pulumi.yaml lists them in this order).
SECTIONS: Mapping[str, tuple[Setting, ...]] = {**INFRASTRUCTURE, **SERVING, **OPERATIONS}

# The keys a first deploy sets or reads (docs/getting-started.md), then those a production stack decides; the
# reference lists them first, in this order, and every other key after them as tuning.
FIRST_DEPLOY_KEYS = (
    "aws:region",
    "apiPublicAccessCidrs",
    "clusterName",
    "gpuNodeType",
    "modelSource",
    "modelId",
    "hfToken",
    "maxModelLen",
    "prefillReplicas",
    "decodeReplicas",
)
PRODUCTION_KEYS = (
    "serveExposure",
    "serveSourceCidrs",
    "serveApiKeys",
    "serveCertificateArn",
    "adminPrincipalArns",
    "protectResources",
    "natGatewayPerAz",
    "controlPlaneLogging",
    "secretsEncryption",
    "headFaultTolerance",
    "clusterUpgradeStrategy",
    "serveAutoscaling",
    "prefillMaxReplicas",
    "decodeMaxReplicas",
    "capacityReservationId",
    "gpuCapacityType",
    "modelCache",
    "observability",
    "ttftP99ObjectiveMs",
    "ampWorkspaceUrl",
    "alertSnsTopicArn",
    "alertSlackWebhookUrl",
    "alertPagerDutyRoutingKey",
    "runbookUrl",
    "owner",
    "costCenter",
)
SETTINGS = tuple(setting for section in SECTIONS.values() for setting in section)
SETTINGS_BY_KEY: Mapping[str, Setting] = {setting.key: setting for setting in SETTINGS}
# The program's own keys (the provider's aws:region aside): any other key of its namespace is a typo.
PROJECT_KEYS = frozenset(setting.key for setting in SETTINGS if ":" not in setting.key)


def settings_by_tier() -> dict[str, tuple[Setting, ...]]:
    """Every setting once: the first-deploy keys, the production keys, then the rest in table order."""
    first = tuple(SETTINGS_BY_KEY[key] for key in FIRST_DEPLOY_KEYS)
    production = tuple(SETTINGS_BY_KEY[key] for key in PRODUCTION_KEYS)
    named = {*FIRST_DEPLOY_KEYS, *PRODUCTION_KEYS}
    tuning = tuple(setting for setting in SETTINGS if setting.key not in named)
    return {"First deploy": first, "Production": production, "Tuning": tuning}


# What a change to each setting does; a test runs the program with each setting changed and holds these to what
# the change does to the declared resources.
CHANGE_EFFECTS: Mapping[str, tuple[Effect, ...]] = {setting.key: setting.effects for setting in SETTINGS}


def effects_of(key: str, strategy: str = REPLACE) -> tuple[Effect, ...]:
    """What a change to `key` does with clusterUpgradeStrategy `strategy`: with newCluster, a change that would
    replace the RayService updates it in place instead and KubeRay builds a second cluster (RAYSERVICE_NEW_CLUSTER),
    and so does a serve-config change (SERVE_NEW_CLUSTER: infra/serving/rayservice.py CLUSTER_SPEC_ANNOTATION).
    A key that names both (the strategy itself) keeps its own."""
    effects = CHANGE_EFFECTS[key]
    if strategy != NEW_CLUSTER or RAYSERVICE_NEW_CLUSTER in effects:
        return effects
    on_new_cluster = {RAYSERVICE_REPLACED: RAYSERVICE_NEW_CLUSTER, SERVE_IN_PLACE: SERVE_NEW_CLUSTER}
    return tuple(on_new_cluster.get(effect, effect) for effect in effects)


def settings_by_effect(settings: Mapping[str, str], strategy: str = REPLACE) -> dict[str, dict[str, str]]:
    """The settings grouped under the most severe effect a change to each has with the stack's
    clusterUpgradeStrategy, mildest group first: the ServeRollout's input, so that `pulumi preview --diff` names each
    changed setting under what it costs on the path that applies (`rayservice-replaced` or `rayservice-new-cluster`)."""
    severest = {key: max(effects_of(key, strategy), key=ALL_EFFECTS.index) for key in settings}
    return {
        effect.name: {key: value for key, value in sorted(settings.items()) if severest[key] is effect}
        for effect in ALL_EFFECTS
        if effect in severest.values()
    }
