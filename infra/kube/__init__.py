"""Kubernetes facts the stack's parts share, as plain data; no setting lives here (each module: docs/layout.md#layout).

Imports: nothing else of infra/."""
