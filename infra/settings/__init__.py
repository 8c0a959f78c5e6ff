"""The settings: the one frozen `StackConfig`, the table of its keys, their rules, what a change of each costs and the
facts they are checked against; plain Python, no resource (each module: docs/layout.md#layout).

Imports: infra.kube."""
