"""vLLM 0.26.0's own source as the tests read it: the files vendored out of its wheel (vendor/vllm-0.26.0/SOURCE.txt),
parsed with `ast`, never imported (vLLM is not installed where the tests run)."""

from __future__ import annotations

import ast
from functools import cache

from tools.project import PROJECT_DIR

VLLM = PROJECT_DIR / "vendor" / "vllm-0.26.0"


@cache
def vllm_tree(name: str) -> ast.Module:
    return ast.parse((VLLM / name).read_text())


def vllm_class(name: str, class_name: str) -> ast.ClassDef:
    (found,) = [n for n in ast.walk(vllm_tree(name)) if isinstance(n, ast.ClassDef) and n.name == class_name]
    return found


def vllm_method(name: str, class_name: str, method: str) -> ast.FunctionDef:
    (found,) = [n for n in vllm_class(name, class_name).body if isinstance(n, ast.FunctionDef) and n.name == method]
    return found


def engine_args_fields() -> set[str]:
    """The fields of `EngineArgs` (vllm/engine/arg_utils.py), which Ray Serve LLM hands engine_kwargs to."""
    return {n.target.id for n in vllm_class("arg_utils.py", "EngineArgs").body if isinstance(n, ast.AnnAssign)}
