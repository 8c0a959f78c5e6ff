"""The serve config as a document: paths into it, the named overrides applied at them, what changed between two
versions, and the engines (prefill, decode, the baseline's one) it holds.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from infra.serving.serve_config import PD_SIDES

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Override:
    """One change to the production serve config, printed by name with its reason."""

    name: str
    path: Path_
    value: Any
    reason: str
    remove: bool = False  # drop the path instead of setting it

    def apply(self, document: dict[str, Any]) -> None:
        if self.remove:
            node: Any = document
            for key in self.path[:-1]:
                node = node[key]
            del node[self.path[-1]]
        else:
            set_path(document, self.path, copy.deepcopy(self.value))

    def describe(self) -> str:
        change = "removed" if self.remove else f"= {json.dumps(self.value)}"
        return f"{self.name}: {format_path(self.path)} {change}  ({self.reason})"


def format_path(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def set_path(document: Any, path: Path_, value: Any) -> None:
    node = document
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value


def has_path(document: Any, path: Path_) -> bool:
    node: Any = document
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node):
            node = node[key]
        else:
            return False
    return True


_MISSING = object()


def changed_paths(before: Any, after: Any, prefix: Path_ = ()) -> set[Path_]:
    """Paths of the leaves that differ between two JSON-like documents (added and removed too)."""
    before_dict = before if isinstance(before, dict) else ({} if before is _MISSING else None)
    after_dict = after if isinstance(after, dict) else ({} if after is _MISSING else None)
    if before_dict is not None and after_dict is not None and (before is not _MISSING or after is not _MISSING):
        keys = list(before_dict) + [k for k in after_dict if k not in before_dict]
        return set().union(
            *(changed_paths(before_dict.get(k, _MISSING), after_dict.get(k, _MISSING), (*prefix, k)) for k in keys)
        )
    nested_lists = isinstance(before, list) and isinstance(after, list) and len(before) == len(after)
    if nested_lists and any(isinstance(item, (dict, list)) for item in before + after):
        return set().union(
            *(changed_paths(b, a, (*prefix, i)) for i, (b, a) in enumerate(zip(before, after, strict=True)))
        )
    return set() if before == after else {prefix}


def unexplained_changes(before: Any, after: Any, overrides: list[Override]) -> set[Path_]:
    """Changed paths that no override names, itself or as a parent (the baseline replaces `args` whole)."""
    return {
        path
        for path in changed_paths(before, after)
        if not any(path[: len(override.path)] == override.path for override in overrides)
    }


def pair_path(cfg_doc: dict[str, Any]) -> Path_:
    """Where the PD pair's configs are: the app's args, or their `pd_config` where the stack's several-model builder
    serves other models beside it (infra/serving/serve_config.py MODELS_IMPORT_PATH)."""
    args = cfg_doc["applications"][0]["args"]
    return ("applications", 0, "args", *(("pd_config",) if "pd_config" in args else ()))


def pair_args(cfg_doc: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = cfg_doc["applications"][0]["args"]
    pair: dict[str, Any] = args.get("pd_config", args)
    return pair


def side_config(cfg_doc: dict[str, Any], side: str) -> dict[str, Any]:
    config: dict[str, Any] = pair_args(cfg_doc)[f"{side}_config"]
    return config


def engine_replicas(llm_config: dict[str, Any]) -> int:
    """An engine's replicas as the stack deploys them: fixed, or an autoscaling deployment's minimum."""
    deployment = llm_config["deployment_config"]
    return int(deployment.get("num_replicas") or deployment["autoscaling_config"]["min_replicas"])


def side_replicas(cfg_doc: dict[str, Any], side: str) -> int:
    return engine_replicas(side_config(cfg_doc, side))


def engines_of(cfg_doc: dict[str, Any]) -> int:
    """The engines the app runs: every replica of each LLMConfig (prefill and decode, or the baseline's one)."""
    return sum(engine_replicas(engine) for engine in engine_configs(cfg_doc))


def engine_configs(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The LLMConfigs of a serve config: prefill and decode, or the baseline's one, and the models beside the pair
    (the documents themselves)."""
    args = config["applications"][0]["args"]
    pair = pair_args(config)
    sides = [pair[f"{side}_config"] for side in PD_SIDES] if "decode_config" in pair else []
    return sides + list(args.get("llm_configs", []))


def served_engine(smoke: dict[str, Any]) -> dict[str, Any]:
    """The engine config the ingress routes to: decode in the PD app, the one engine in the baseline."""
    pair = pair_args(smoke)
    engine: dict[str, Any] = pair["decode_config"] if "decode_config" in pair else pair["llm_configs"][0]
    return engine
