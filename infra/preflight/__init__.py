"""The preflight: every deploy-time lookup (EC2 offerings, quotas and Capacity Blocks, EKS versions and add-ons, the
model's config.json), run once before any resource is declared, its problems reported together (`checks`,
`offerings`, `quota`, `reservation`).

Imports: infra.settings, infra.network, infra.cluster, infra.serving.
"""
