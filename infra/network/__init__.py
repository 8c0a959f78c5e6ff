"""The network: the VPC in the AZs that offer the GPU type, cut by a plain subnet plan (docs/layout.md#layout).

Imports: infra.settings, infra.components."""
