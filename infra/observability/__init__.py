"""Observability: the metrics stack, dashboards, alerts and where they go (each module: docs/layout.md#layout).

Imports: infra.kube, infra.settings, infra.components, infra.cluster."""
