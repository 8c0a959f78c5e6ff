"""pulumi-eks's components expanded by their own implementation, with the inputs this program passes.

Python's mocks cannot open `eks.Cluster` and `eks.ManagedNodeGroup`: they are remote components,
built at deploy time by the pulumi-eks provider from its TypeScript (pulumi/pulumi-eks `nodejs/eks`,
vendored in `vendor/pulumi-eks-4.3.0`). This module hands the inputs captured from an
offline run to `tests/pulumi_eks_expansion/runner.ts`, which constructs the components under
@pulumi/pulumi's mocks and reports every child resource, or what the construction threw.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.offline import Resource, StackRun
from tools.project import PROJECT, PROJECT_DIR

EXPANSION_DIR = PROJECT_DIR / "tests" / "pulumi_eks_expansion"
# The vendored pulumi-eks `nodejs/eks` (vendor/README.md): tsc compiles it with the runner, so its output keeps
# the layout below the repository root (tsconfig.json `rootDir`).
VENDORED_PULUMI_EKS = PROJECT_DIR / "vendor" / "pulumi-eks-4.3.0"
RUNNER = EXPANSION_DIR / "bin" / "tests" / "pulumi_eks_expansion" / "runner.js"
CLUSTER = "eks:index:Cluster"
MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"
SETUP = f"node 20+ and npm, then `npm ci --ignore-scripts` in {EXPANSION_DIR.relative_to(PROJECT_DIR)}"


def missing_toolchain() -> str | None:
    """Why the expansion cannot run here, or None when node, npm and the installed packages are present."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH; the pulumi-eks expansion tests need {SETUP}"
    if not (EXPANSION_DIR / "node_modules" / "typescript").is_dir():
        return f"the npm packages are not installed; the pulumi-eks expansion tests need {SETUP}"
    return None


def _sources() -> list[Path]:
    return [EXPANSION_DIR / "runner.ts", EXPANSION_DIR / "tsconfig.json", *VENDORED_PULUMI_EKS.glob("nodejs/**/*.ts")]


def build() -> None:
    """Compiles the runner and the vendored pulumi-eks with tsc, unless the output is newer than every source."""
    if RUNNER.exists() and RUNNER.stat().st_mtime >= max(path.stat().st_mtime for path in _sources()):
        return
    subprocess.run(["npm", "run", "--silent", "build"], cwd=EXPANSION_DIR, check=True)


def _with_references(resource: Resource) -> dict[str, Any]:
    """The resource's inputs with each resource reference as the runner's `{"$resource": ...}` marker.

    The offline run keeps a reference's id (a custom resource) or URN (a component) in `inputs`.
    """
    inputs = json.loads(json.dumps(resource.inputs))
    for path, urn in resource.references.items():
        *parents, last = path.split(".")
        holder: Any = inputs
        for key in parents:
            holder = holder[int(key)] if isinstance(holder, list) else holder[key]
        slot = int(last) if isinstance(holder, list) else last
        kept = holder[slot]
        holder[slot] = {"$resource": {"urn": urn, "id": None if kept == urn else kept}}
    return inputs


def runner_request(run: StackRun, region: str) -> dict[str, Any]:
    """What the program passes to `eks.Cluster` and to each `eks.ManagedNodeGroup`."""
    (cluster,) = run.of_type(CLUSTER)
    return {
        "project": PROJECT,
        "stack": "expansion",
        "region": region,
        "cluster": {"name": cluster.name, "urn": cluster.urn, "inputs": _with_references(cluster)},
        "nodeGroups": [
            {"name": group.name, "inputs": _with_references(group)} for group in run.of_type(MANAGED_NODE_GROUP)
        ],
    }


@dataclass(frozen=True)
class Child:
    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    dependencies: tuple[str, ...]
    inputs: dict[str, Any]


@dataclass(frozen=True)
class Expansion:
    resources: tuple[Child, ...]
    invokes: tuple[str, ...]
    errors: tuple[str, ...]

    def of_type(self, type_: str) -> list[Child]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> Child:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        assert len(matches) == 1, f"expected one {type_} named {name!r}, found {len(matches)}"
        return matches[0]

    def descendants(self, ancestor: Child) -> list[Child]:
        """Every resource under `ancestor` in the parent tree."""
        below = {ancestor.urn}
        found: list[Child] = []
        for resource in self.resources:  # registrations come parent first
            if resource.parent in below:
                below.add(resource.urn)
                found.append(resource)
        return found


def expand(request: dict[str, Any]) -> Expansion:
    """Runs the node runner on a request (see `runner_request`) and parses what it reports."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(request, handle)
    try:
        completed = subprocess.run(
            ["node", str(RUNNER), handle.name],
            cwd=EXPANSION_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PULUMI_CONFIG": "{}"},
        )
    finally:
        os.unlink(handle.name)
    assert completed.returncode == 0, f"the runner failed ({completed.returncode}):\n{completed.stderr}"
    report = json.loads(completed.stdout)
    return Expansion(
        resources=tuple(
            Child(
                type=r["type"],
                name=r["name"],
                urn=r["urn"],
                parent=r["parent"],
                custom=r["custom"],
                dependencies=tuple(r["dependencies"]),
                inputs=r["inputs"],
            )
            for r in report["resources"]
        ),
        invokes=tuple(call["token"] for call in report["invokes"]),
        errors=tuple(report["errors"]),
    )
