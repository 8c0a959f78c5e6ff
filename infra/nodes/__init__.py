"""The nodes: the system and EFA GPU node groups and what the GPU nodes run (docs/layout.md#layout).

Imports: infra.kube, infra.settings, infra.components, infra.cluster."""
