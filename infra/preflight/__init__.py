"""The preflight: every deploy-time lookup, run once before any resource, its problems reported together (each module:
docs/layout.md#layout).

Imports: infra.settings, infra.network, infra.cluster, infra.serving."""
