"""Helm releases, always pinned to a chart version and installed through the cluster's provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class Chart:
    name: str
    repo: str
    version: str


def pinned_release(
    name: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] | None = None,
) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        name,
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
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on or []),
    )
