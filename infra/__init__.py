"""ray-llm-eks: multi-node LLM inference on Amazon EKS, one `pulumi up` per environment.

The packages follow the architecture, and each imports only the ones below it (its docstring's `Imports:` line,
held by tests/test_layout.py):

- `kube/`: Kubernetes facts every part shares (node labels and taints, pod labels, namespaces, Pod Security).
- `settings/`: the stack config, its table of keys and their rules, the facts they are checked against.
- `components.py`: what every ComponentResource shares (children, input errors).
- `network/`: the VPC.
- `cluster/`: the EKS cluster, its Kubernetes provider, Helm releases and IRSA roles.
- `nodes/`: the system and GPU node groups and what runs on every GPU node.
- `serving/`: KubeRay, the RayService and its serve config, the rollout's wait, the model cache.
- `observability/`: metrics, dashboards and alerts.
- `preflight/`: the deploy-time lookups, run before any resource.
- `stack.py`: the whole stack, top-down; `__main__.py` runs it.
- `preview_notes.py`: what `pulumi preview` and `pulumi up` say about the stack before they change it.
"""

from pathlib import Path

# The repository: infra/ reads the vendored sources (vendor/) and the in-cluster code (serve_ext/) from it.
PROJECT_DIR = Path(__file__).resolve().parent.parent
