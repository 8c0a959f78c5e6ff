"""Serving: the KubeRay operator, the inference namespace, the RayService and its endpoint."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi.errors import InputPropertyErrorDetails

from infra.cluster.eks import Cluster
from infra.components import Children, declare_manifest, network_policy_role, problem, raise_input_errors
from infra.kube.pod_security import SERVING_LEVEL, pod_security_labels
from infra.serving import edge, serve_auth
from infra.serving.code_package import CodePackage
from infra.serving.edge import Edge
from infra.serving.kuberay import KubeRayOperator, KubeRayOperatorArgs
from infra.serving.rayservice import (
    CLUSTER_SPEC_ANNOTATION,
    GCS_REDIS_CA_CONFIG_MAP,
    GCS_REDIS_CA_KEY,
    GCS_REDIS_PASSWORD_KEY,
    GCS_REDIS_SECRET,
    GCS_REDIS_SERVICE,
    HF_TOKEN_KEY,
    HF_TOKEN_SECRET,
    INSTANCE_LABEL,
    RAY_CLUSTER_LABEL,
    UPGRADE_REPLACE,
    build_prepull_daemonset,
    gcs_redis_ca_bundle,
)
from infra.serving.rayservice_drain import RayServiceDrain, RayServiceDrainArgs
from infra.serving.rollout import ServeRollout, ServeRolloutArgs
from infra.serving.rollout_status import built_from, has_gcs_fault_tolerance

# A fresh set of a child's options for each child: what every object of one namespace is made with.
Opts = Callable[[], pulumi.ResourceOptions]
# A change under these replaces the RayService (RAYSERVICE_REPLACED): Pulumi's engine makes every changed path below
# one a replacement (pulumi/pulumi pkg/resource/deploy/step_generator.go applyReplaceOnChanges).
REPLACE_ON_CHANGES = ["spec.rayClusterConfig"]


def replaced_on_cluster_change(rayservice: Mapping[str, Any]) -> bool:
    """upgradeStrategy None: KubeRay leaves a running cluster as it is on a rayClusterConfig change
    (shouldPrepareNewCluster returns isZeroDowntimeUpgradeEnabled, false then), so Pulumi replaces the RayService.
    NewCluster (or none given, KubeRay's default): Pulumi updates it in place and KubeRay builds the new cluster beside
    the active one."""
    return bool((rayservice.get("spec", {}).get("upgradeStrategy") or {}).get("type") == UPGRADE_REPLACE)


def dropped_auth_options(applied: Mapping[str, Any], live: Mapping[str, Any] | None) -> str | None:
    """A RayService applied with authOptions that the API server stored without them: its CRD predates the field, so Ray
    would run without its token (docs/kuberay-versions.md#f-token-auth)."""
    if "authOptions" not in applied.get("rayClusterConfig", {}) or live is None:
        return None
    if "authOptions" in (live.get("rayClusterConfig") or {}):
        return None
    return (
        "the RayService was stored without rayClusterConfig.authOptions: the cluster's RayService CRD is older than "
        "KubeRay 1.5.1 (helm upgrade leaves the first install's CRDs; the stack applies a validated release's only), "
        "so Ray runs without its token. Apply the CRDs of the kuberayVersion in use (docs/kuberay-versions.md) and "
        "run `pulumi up` again, or set rayAuthMode 'disabled'"
    )


def cluster_spec_sha256(rayservice: Mapping[str, Any]) -> str:
    """The digest the cluster spec carries on its head's pod template (infra/serving/rayservice.py), or ""."""
    return built_from({"spec": rayservice.get("spec", {}).get("rayClusterConfig")})


@dataclass(frozen=True)
class GcsStoreAccess:
    """The Ray head's GCS store as the serving namespace gets it (infra/serving/gcs_store.py)."""

    endpoint: pulumi.Input[str]  # the primary's DNS name, which the head reaches through the GCS_REDIS_SERVICE alias
    auth_token: pulumi.Input[str]  # secret; the head reads it from the GCS_REDIS_SECRET Secret


@dataclass(frozen=True)
class ServingArgs:
    """The serving objects: plain manifests (`infra.serving.rayservice` builds them), the operator that runs them, and
    the token the RayService reads from the `hf-token` Secret when it refers to one."""

    namespace: str  # the namespace the RayService and its Secrets go in (created here)
    operator: KubeRayOperatorArgs  # the KubeRay operator to install
    rayservice: Mapping[str, Any]  # the RayService manifest (apiVersion, kind, metadata, spec), in `namespace`
    hf_token: pulumi.Input[str] | None = None
    # The serve endpoint's API keys (a secret list) when the RayService asks for them (infra/serving/serve_auth.py).
    api_keys: pulumi.Input[list[str]] | None = None
    load_balancer: Mapping[str, Any] | None = None  # a Service in front of the serve pods
    ready_timeout_seconds: int = 45 * 60  # how long `pulumi up` waits for the applied config to run
    # Settings grouped by what a change to them does (infra.settings.changes.settings_by_effect), for the preview's
    # diff.
    changes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The GPU workers' service account, by name, and the IAM role it stands for (IRSA): the model cache's reader
    # (infra/serving/model_cache.py), which the RayService's worker pods name.
    worker_service_account: tuple[str, pulumi.Input[str]] | None = None
    # What must be done before the RayService is applied: the model cache's mirror Job.
    waits_for: Sequence[pulumi.Resource] = ()
    # The namespace's NetworkPolicies (infra/serving/network_policy.py), in place before the Ray pods start: the VPC
    # CNI applies a pod's policies as it starts it, and a pod started before they exist is open until they do.
    network_policies: Sequence[Mapping[str, Any]] = ()
    # The image the Ray pods run, pulled onto every node as it joins (infra/serving/rayservice.py
    # build_prepull_daemonset); None: no pre-pull.
    prepull_image: str | None = None
    # The GCS store, when the RayService's cluster keeps its tables there (gcsFaultToleranceOptions).
    gcs_store: GcsStoreAccess | None = None
    # The stack's code the app loads besides the API-key ingress (the prefix router, the latency policy, the models'
    # builder: infra/serving/serve_config.py code_packages), each as a ConfigMap the pods mount.
    code_packages: Sequence[CodePackage] = ()
    # The serve edge's configuration, as the ConfigMap the worker pods mount (infra/serving/edge.py).
    edge: Edge | None = None


def serving_args_errors(args: ServingArgs) -> list[InputPropertyErrorDetails]:
    errors: list[InputPropertyErrorDetails] = []
    if (
        args.rayservice.get("kind") != "RayService"
        or args.rayservice.get("metadata", {}).get("namespace") != args.namespace
    ):
        errors.append(problem("rayservice", f"not a RayService manifest in namespace {args.namespace!r}"))
    elif (
        "rayClusterConfig" in args.rayservice.get("spec", {})
        and not replaced_on_cluster_change(args.rayservice)
        and not cluster_spec_sha256(args.rayservice)
    ):
        # Without it the wait could not tell the new cluster from the one serving, nor would a replicas-only change
        # reach KubeRay's hash.
        errors.append(
            problem("rayservice", f"an in-place cluster upgrade needs {CLUSTER_SPEC_ANNOTATION} on the head template")
        )
    if has_gcs_fault_tolerance(args.rayservice) != (args.gcs_store is not None):
        # A head told of a store that was not made waits for it and restarts; a store no head names is paid for idle.
        errors.append(
            problem("gcs_store", "given without the RayService's gcsFaultToleranceOptions, or missing with them")
        )
    outside = [p["metadata"]["name"] for p in args.network_policies if p["metadata"].get("namespace") != args.namespace]
    if outside:
        errors.append(problem("network_policies", f"{outside} are not in namespace {args.namespace!r}"))
    if args.ready_timeout_seconds <= 0:
        errors.append(problem("ready_timeout_seconds", f"{args.ready_timeout_seconds}: allowed is a positive number"))
    if args.worker_service_account is not None:
        account = args.worker_service_account[0]
        # An account no worker pod names gives the workers nothing: they would load without the access it grants.
        groups = args.rayservice.get("spec", {}).get("rayClusterConfig", {}).get("workerGroupSpecs", [])
        named = [group.get("template", {}).get("spec", {}).get("serviceAccountName") for group in groups]
        if not named or any(name != account for name in named):
            errors.append(problem("worker_service_account", f"{account!r} is not the account of every worker pod"))
    return errors


def rollout_args(
    args: ServingArgs, kubeconfig: pulumi.Input[str], generation: pulumi.Input[int], uid: pulumi.Input[str]
) -> ServeRolloutArgs:
    """What the ServeRollout waits for, all read off the RayService manifest but the live `generation` and `uid`."""
    manifest = args.rayservice
    name = manifest["metadata"]["name"]
    return ServeRolloutArgs(
        kubeconfig=kubeconfig,
        namespace=manifest["metadata"]["namespace"],
        name=name,
        pod_selector=f"{INSTANCE_LABEL}={name}",
        applications=yaml.safe_load(manifest["spec"]["serveConfigV2"])["applications"],
        spec_sha256=hashlib.sha256(json.dumps(manifest["spec"], sort_keys=True).encode()).hexdigest(),
        timeout_seconds=args.ready_timeout_seconds,
        changes=args.changes,
        rayservice_generation=generation,
        rayservice_uid=uid,
        cluster_spec_sha256="" if replaced_on_cluster_change(manifest) else cluster_spec_sha256(manifest),
    )


def code_config_map(package: CodePackage, children: Children, namespace: str, opts: Opts) -> pulumi.Resource:
    """The package as a ConfigMap holding the zip its `py_modules` URI names, mounted into the Ray pods
    (infra/serving/rayservice.py code_volumes)."""
    return k8s.core.v1.ConfigMap(
        children.name(package.configmap_prefix),
        metadata=k8s.meta.v1.ObjectMetaArgs(name=package.configmap_name(), namespace=namespace),
        binary_data={package.zip_name(): base64.b64encode(package.zip()).decode()},
        opts=opts(),
    )


def _secret(children: Children, role: str, name: str, namespace: str, data: Any, opts: Opts) -> pulumi.Resource:
    return k8s.core.v1.Secret(
        children.name(role),
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace),
        type="Opaque",
        string_data=data,
        opts=opts(),
    )


def gcs_store_objects(store: GcsStoreAccess, namespace: str, children: Children, opts: Opts) -> list[pulumi.Resource]:
    """The store's AUTH token as the Secret KubeRay reads the head's password from, the CAs its TLS chains to as a
    ConfigMap the head mounts (infra/serving/rayservice.py GCS_REDIS_CA_ENV), and an ExternalName Service whose
    cluster DNS name is a CNAME of the primary's endpoint (https://kubernetes.io/docs/concepts/services-networking/
    service/#externalname): the RayService names a fixed address, and a failover's new primary is the endpoint's."""
    password = {GCS_REDIS_PASSWORD_KEY: pulumi.Output.secret(store.auth_token)}
    return [
        _secret(children, "gcs-redis-password", GCS_REDIS_SECRET, namespace, password, opts),
        k8s.core.v1.ConfigMap(
            children.name("gcs-redis-ca"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=GCS_REDIS_CA_CONFIG_MAP, namespace=namespace),
            data={GCS_REDIS_CA_KEY: gcs_redis_ca_bundle()},
            opts=opts(),
        ),
        k8s.core.v1.Service(
            children.name("gcs-redis-address"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=GCS_REDIS_SERVICE, namespace=namespace),
            spec=k8s.core.v1.ServiceSpecArgs(type="ExternalName", external_name=store.endpoint),
            opts=opts(),
        ),
    ]


class Serving(pulumi.ComponentResource):
    load_balancer_hostname: pulumi.Output[str] | None

    def __init__(
        self,
        name: str,
        args: ServingArgs,
        cluster: Cluster,
        system_nodes: pulumi.Resource,
        device_plugins: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        raise_input_errors("Serving", serving_args_errors(args))
        super().__init__("ray-llm-eks:serving:Serving", name, None, opts)
        children = Children(self, name)

        operator = KubeRayOperator(
            children.name("kuberay"), args.operator, cluster, depends_on=[system_nodes], opts=children.opts()
        )
        namespace = k8s.core.v1.Namespace(
            children.name("namespace"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=pod_security_labels(SERVING_LEVEL)),
            opts=children.opts(provider=cluster.provider),
        )

        def in_namespace() -> pulumi.ResourceOptions:
            return children.opts(provider=cluster.provider, depends_on=[namespace])

        if args.prepull_image:
            # Made with the namespace, before any node exists: each node's pull starts as the node joins.
            prepull = build_prepull_daemonset(args.prepull_image, args.namespace)
            declare_manifest(children, "image-prepull", prepull, in_namespace())
        prerequisites = [operator.release, device_plugins, namespace, *_rayservice_inputs(args, children, in_namespace)]
        rayservice = _rayservice(args, children, cluster, prerequisites)
        # A resource's output properties are set on it from its inputs' names at run time (pulumi
        # runtime/rpc.py `transfer_properties`: `res.__dict__[name] = Output(...)`); CustomResource declares none.
        metadata = pulumi.Output.from_input(rayservice.metadata)  # type: ignore[attr-defined]
        pulumi.Output.from_input(rayservice.spec).apply(  # type: ignore[attr-defined]
            lambda live: _fail_on(dropped_auth_options(args.rayservice["spec"], live))
        )
        applied_generation = metadata.apply(lambda live: (live or {}).get("generation", 0))
        # The API server gives each object it creates a new uid, so a replaced RayService always changes the
        # rollout's inputs, even where its spec and generation (1 again) equal the state the rollout last stored.
        created_uid = metadata.apply(lambda live: (live or {}).get("uid", ""))
        rollout = ServeRollout(
            children.name("rollout"),
            rollout_args(args, cluster.kubeconfig, applied_generation, created_uid),
            opts=children.opts(depends_on=[rayservice]),
        )
        self.load_balancer_hostname = None
        if args.load_balancer:
            after = None if replaced_on_cluster_change(args.rayservice) else rollout
            self.load_balancer_hostname = _load_balancer_hostname(
                args.load_balancer, children, cluster, namespace, after
            )
        self.register_outputs({})


def _fail_on(problem: str | None) -> None:
    if problem:
        raise pulumi.RunError(problem)


def _rayservice_inputs(args: ServingArgs, children: Children, opts: Opts) -> list[pulumi.Resource]:
    """What the RayService's pods read or are guarded by, made before it: the Hub token's Secret, the NetworkPolicies,
    the auth objects, the router's code, the workers' service account; and what it waits for (the model's mirror)."""
    inputs = []
    if args.hf_token is not None:
        token = {HF_TOKEN_KEY: args.hf_token}
        inputs.append(_secret(children, "hf-token", HF_TOKEN_SECRET, args.namespace, token, opts))
    inputs += [
        declare_manifest(children, network_policy_role(policy), policy, opts()) for policy in args.network_policies
    ]
    if args.api_keys is not None:  # the auth package and the keys (one a line), both mounted into the Ray pods
        keys = {serve_auth.KEYS_SECRET_KEY: pulumi.Output.secret(args.api_keys).apply(serve_auth.keys_file_content)}
        inputs += [
            code_config_map(serve_auth.CODE, children, args.namespace, opts),
            _secret(children, "serve-api-keys", serve_auth.KEYS_SECRET, args.namespace, keys, opts),
        ]
    if args.gcs_store is not None:
        inputs.extend(gcs_store_objects(args.gcs_store, args.namespace, children, opts))
    inputs += [code_config_map(package, children, args.namespace, opts) for package in args.code_packages]
    if args.edge is not None:
        inputs.append(
            k8s.core.v1.ConfigMap(
                children.name(edge.CONFIGMAP_PREFIX),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=args.edge.configmap_name(), namespace=args.namespace),
                data=args.edge.configmap_data(),
                opts=opts(),
            )
        )
    if args.worker_service_account is not None:
        account, role_arn = args.worker_service_account
        inputs.append(
            k8s.core.v1.ServiceAccount(
                children.name("worker-service-account"),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=account, namespace=args.namespace, annotations={"eks.amazonaws.com/role-arn": role_arn}
                ),
                opts=opts(),
            )
        )
    return [*inputs, *args.waits_for]


def _rayservice(
    args: ServingArgs, children: Children, cluster: Cluster, prerequisites: list[pulumi.Resource]
) -> k8s.apiextensions.CustomResource:
    """The RayService after its prerequisites and after the drain, which waits on them: on destroy the drain goes
    between the RayService and them (infra/serving/rayservice_drain.py)."""
    manifest = args.rayservice
    drain = RayServiceDrain(
        children.name("rayservice-drain"),
        RayServiceDrainArgs(kubeconfig=cluster.kubeconfig, namespace=args.namespace, name=manifest["metadata"]["name"]),
        opts=children.opts(depends_on=prerequisites),
    )
    return k8s.apiextensions.CustomResource(
        children.name("rayservice"),
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        # The operator's CRDs, the device plugins' resources and the namespace must exist first. The name is
        # fixed, so a replacement deletes the old RayService (and its cluster's GPUs) before creating the new. With
        # an in-place cluster upgrade (NewCluster) a rayClusterConfig change is an update, which KubeRay carries out.
        opts=children.opts(
            provider=cluster.provider,
            depends_on=[*prerequisites, drain],
            **(
                {"replace_on_changes": REPLACE_ON_CHANGES, "delete_before_replace": True}
                if replaced_on_cluster_change(manifest)
                else {}
            ),
        ),
    )


def _load_balancer_hostname(
    service: Mapping[str, Any],
    children: Children,
    cluster: Cluster,
    namespace: pulumi.Resource,
    rollout: ServeRollout | None,
) -> pulumi.Output[str]:
    """The load balancer Service. With `rollout` (an in-place cluster upgrade) it selects the pods of the RayCluster the
    rollout last saw serving the applied config, and moves only after it, while the old cluster still serves; not
    KubeRay's spec.serveService, whose annotations KubeRay never writes
    (docs/changes.md#keeping-serving-through-a-cluster-shape-change-newcluster, step 5)."""
    spec: Any = service["spec"]
    depends_on: list[pulumi.Resource] = [namespace]
    if rollout is not None:
        spec = rollout.cluster.apply(
            lambda active: {**service["spec"], "selector": {**service["spec"]["selector"], RAY_CLUSTER_LABEL: active}}
        )
        depends_on.append(rollout)
    load_balancer = k8s.core.v1.Service(
        children.name("serve-load-balancer"),
        metadata=service["metadata"],
        spec=spec,
        opts=children.opts(provider=cluster.provider, depends_on=depends_on),
    )
    return load_balancer.status.load_balancer.ingress[0].hostname
