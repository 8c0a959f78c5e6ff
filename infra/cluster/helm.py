"""Helm releases, always pinned to a chart version and installed through the cluster's provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.components import Children
from infra.kube.pod_security import pod_security_labels


@dataclass(frozen=True)
class Chart:
    name: str
    repo: str
    version: str


def pinned_release(
    children: Children,
    name: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    provider: k8s.Provider,
    depends_on: Sequence[pulumi.Resource] | None = None,
) -> k8s.helm.v3.Release:
    """The Helm release `name` (fixed: a new name would be a new release), a child of the component `children` is of."""
    return k8s.helm.v3.Release(
        children.name(name),
        name=name,
        chart=chart.name,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
        namespace=namespace,
        create_namespace=True,
        values=values,
        # Wait for the workloads to be ready, so what depends on the release finds it working.
        skip_await=False,
        atomic=True,
        opts=children.opts(provider=provider, depends_on=depends_on or []),
    )


def pod_security_patch(
    children: Children, namespace: str, level: str, provider: k8s.Provider, release: pulumi.Resource
) -> k8s.core.v1.NamespacePatch:
    """The Pod Security Admission labels (infra/kube/pod_security.py) on a namespace a release created: a patch,
    since the namespace is Helm's and pulumi-kubernetes refuses to create an object that exists (4.29.0 release notes:
    "use Patch resources (e.g. NamespacePatch)")."""
    return k8s.core.v1.NamespacePatch(
        children.name(f"namespace-{namespace}-pod-security"),
        metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=namespace, labels=pod_security_labels(level)),
        opts=children.opts(provider=provider, depends_on=[release]),
    )
