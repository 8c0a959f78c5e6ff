"""ray-llm-eks: multi-node LLM inference on Amazon EKS, one `pulumi up` per environment.

The packages follow the architecture, bottom up, and each imports only the ones below it (its docstring's `Imports:`
line, held by tests/test_layout.py): `kube/`, `settings/`, `components.py`, `network/`, `cluster/`, `nodes/`,
`serving/`, `observability/`, `preflight/`, then `stack.py` (the whole stack, top-down; `__main__.py` runs it) and
`preview_notes.py`. What each holds: docs/layout.md#layout."""

from pathlib import Path

# The repository: infra/ reads the vendored sources (vendor/) and the in-cluster code (serve_ext/) from it.
PROJECT_DIR = Path(__file__).resolve().parent.parent
