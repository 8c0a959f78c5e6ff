"""The vendored KubeRay sources (vendor/kuberay-v<version>/), read as text by the tests of what the operator does."""

from __future__ import annotations

import re
from functools import cache

from tests.schemas import kuberay_dir


@cache
def kuberay_source(version: str, file: str = "rayservice_controller.go") -> str:
    """One vendored Go file of a KubeRay release (vendor/kuberay-v<version>/SOURCE.txt names its upstream path)."""
    return (kuberay_dir(version) / file).read_text()


def go_function(source: str, name: str) -> str:
    """The body of a Go function or method, from its signature to the closing brace at column 0."""
    start = re.search(rf"^func (?:\([^)]*\) )?{name}\(", source, re.M)
    assert start, name
    end = source.index("\n}\n", start.start())
    return source[start.start() : end]
