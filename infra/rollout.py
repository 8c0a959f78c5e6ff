"""The rollout's old module path, kept for the stacks that state holds it in.

A ServeRollout's state carries its dynamic provider pickled by reference (pulumi/dynamic/dynamic.py
`serialize_provider`, dill): stacks deployed before infra/ had packages hold `infra.rollout.ServeRolloutProvider`
and `infra.rollout.kubernetes_reader`. `pulumi destroy`, a replacement's delete and `pulumi refresh` unpickle the
provider from that state, not from the program (pulumi/dynamic/__main__.py: Delete and Read call `get_provider` on
the stored properties), and an update that would write the new path never comes, since the rollout's diff leaves
`__provider` out (infra.serving.rollout UNCOMPARED_INPUTS). So this path must still import.

Imports: infra.serving.
"""

from infra.serving.rollout import ServeRolloutProvider, kubernetes_reader

__all__ = ["ServeRolloutProvider", "kubernetes_reader"]
