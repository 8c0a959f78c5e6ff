"""The settings: the stack config (`config.load_config` builds the one frozen `StackConfig` from `pulumi.Config`), the
table of its keys (`table`), their rules (`topology`, `capacity`, `quantization`, `prefix_caching`, `config_keys`),
what a change of each costs (`changes`), and the facts they are checked against: EC2 instance types, regions and
partitions, and what each system pod asks of its node (`footprint`, the rule behind systemNodeType); the Kubernetes
facts they check names against are infra/kube's. Plain Python: no resource is declared here.

Imports: infra.kube.
"""
