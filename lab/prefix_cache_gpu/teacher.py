"""Teacher-forced next-token logprobs, and how far two engines' answers for the same tokens lie apart.

Random weights give flat next-token distributions (issue 37: a quarter of the steps have a top-2 margin under 0.07
nats), so greedy tokens part on bf16 ties and comparing generated text says little. Instead every engine is asked,
for the same token sequence, for its next-token distribution: prompt = prefix + suffix + continuation[:t],
`max_tokens` 1, `logprobs` k. The continuation is the uncached engine's own greedy one, so its next token is in
each engine's top k and its logprob can be compared; `prompt_logprobs` would do it in one request but makes vLLM
skip the prefix cache (vllm 0.26.0 `vllm/sampling_params.py`, `skip_reading_prefix_cache`).
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The tokenizer lab/tiny_model.py writes gives its special tokens the first ids; prompts draw from above them.
FIRST_PLAIN_ID = 16
# `return_tokens_as_token_ids` spells each token so (vllm/entrypoints/openai/completion/protocol.py).
TOKEN_ID = re.compile(r"^token_id:(\d+)$")
# Upper edges (nats) of the |Δ logprob| histogram.
HISTOGRAM_EDGES = (0.01, 0.05, 0.1, 0.15, 0.2)
# Pass names: the engine (off/on), one request at a time (seq) or all at once (batch), and which repeat.
UNCACHED_PASSES = ("off.seq1", "off.seq2", "off.batch1", "off.batch2")
CACHED_PASSES = ("on.seq1", "on.seq2", "on.batch1")
# The uncached engine against itself: a repeat, batched against one at a time, and a batched repeat.
UNCACHED_SPREAD = (("off.seq2", "off.seq1"), ("off.batch1", "off.seq1"), ("off.batch2", "off.batch1"))
# The cached engine against the uncached one: on.seq1 fills the cache (the first request of each prefix misses).
CACHED_VS_UNCACHED = (
    ("on.seq1", "off.seq1"),
    ("on.seq2", "off.seq1"),
    ("on.batch1", "off.seq1"),
    ("on.batch1", "off.batch1"),
)


@dataclass(frozen=True)
class TeacherPlan:
    prefixes: int = 4
    prompts_per_prefix: int = 4
    prefix_len: int = 1600
    suffix_len: int = 64
    continuation: int = 12
    top_k: int = 20
    seed: int = 0

    @property
    def positions(self) -> int:
        return self.prefixes * self.prompts_per_prefix * self.continuation


@dataclass(frozen=True)
class Position:
    """One answer: the token the engine chose, its top-k logprobs by token id, the prompt tokens it read cached."""

    sampled: int
    top: Mapping[int, float]
    cached_tokens: int


def prompts(plan: TeacherPlan, vocab_size: int) -> list[list[int]]:
    """`prompts_per_prefix` prompts on each of `prefixes` random prefixes, each with its own random suffix."""
    rng = random.Random(plan.seed)

    def draw(length: int) -> list[int]:
        return [rng.randrange(FIRST_PLAIN_ID, vocab_size) for _ in range(length)]

    result = []
    for _ in range(plan.prefixes):
        prefix = draw(plan.prefix_len)
        result += [prefix + draw(plan.suffix_len) for _ in range(plan.prompts_per_prefix)]
    return result


def generation_body(model: str, prompt: Sequence[int], length: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": list(prompt),
        "max_tokens": length,
        "temperature": 0,
        "ignore_eos": True,
        "logprobs": 1,
        "return_tokens_as_token_ids": True,
    }


def forced_bodies(
    model: str, prompts_: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], top_k: int
) -> list[dict[str, Any]]:
    """One request per continuation step of every prompt, in prompt order then step order."""
    return [
        {**generation_body(model, [*prompt, *continuation[:step]], 1), "logprobs": top_k}
        for prompt, continuation in zip(prompts_, continuations, strict=True)
        for step in range(len(continuation))
    ]


def token_id(text: str) -> int:
    match = TOKEN_ID.match(text)
    if match is None:
        raise ValueError(f"{text!r}: not a token_id:N token (was return_tokens_as_token_ids honoured?)")
    return int(match[1])


def continuation(response: Mapping[str, Any]) -> list[int]:
    return [token_id(token) for token in response["choices"][0]["logprobs"]["tokens"]]


def position(response: Mapping[str, Any]) -> Position:
    logprobs = response["choices"][0]["logprobs"]
    details = (response.get("usage") or {}).get("prompt_tokens_details") or {}
    return Position(
        sampled=token_id(logprobs["tokens"][0]),
        top={token_id(token): value for token, value in logprobs["top_logprobs"][0].items()},
        cached_tokens=details.get("cached_tokens") or 0,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default method)."""
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def histogram(values: Sequence[float]) -> dict[str, int]:
    """How many values fall at or below each of HISTOGRAM_EDGES (and above the last), bin by bin."""
    bins = Counter(
        next((f"<={edge}" for edge in HISTOGRAM_EDGES if value <= edge), f">{HISTOGRAM_EDGES[-1]}") for value in values
    )
    return {name: bins[name] for name in (*(f"<={edge}" for edge in HISTOGRAM_EDGES), f">{HISTOGRAM_EDGES[-1]}")}


def top2_margin(position: Position) -> float:
    first, second = sorted(position.top.values(), reverse=True)[:2]
    return first - second


def compare(a: Sequence[Position], b: Sequence[Position], reference: Sequence[int]) -> dict[str, Any]:
    """|Δ logprob| of the teacher token (the reference), argmax agreement and top-k overlap, position by position;
    where the argmaxes part, the largest top-2 margin `b` had there (how close a tie they parted on)."""
    pairs = list(zip(a, b, strict=True))
    deltas = [
        abs(x.top[ref] - y.top[ref])
        for (x, y), ref in zip(pairs, reference, strict=True)
        if ref in x.top.keys() & y.top.keys()
    ]
    overlaps = [len(x.top.keys() & y.top.keys()) / max(len(x.top), len(y.top)) for x, y in pairs]
    parted = [top2_margin(y) for x, y in pairs if x.sampled != y.sampled]
    return {
        "positions": len(reference),
        "reference_missing": len(reference) - len(deltas),
        "abs_delta_logprob": {
            "max": max(deltas),
            "p99": percentile(deltas, 99),
            "p50": percentile(deltas, 50),
            "mean": sum(deltas) / len(deltas),
        },
        "abs_delta_histogram": histogram(deltas),
        "argmax_agreement": (len(pairs) - len(parted)) / len(reference),
        "argmax_parted_top2_margin_max": max(parted, default=0.0),
        "top_k_overlap": {"mean": sum(overlaps) / len(overlaps), "min": min(overlaps)},
    }


def within_spread(cached: Mapping[str, Any], spread: Sequence[Mapping[str, Any]]) -> bool:
    """The cached path's max and p99 |Δ| at most the largest the uncached engine shows against itself."""
    return all(
        cached["abs_delta_logprob"][stat] <= max(s["abs_delta_logprob"][stat] for s in spread)
        for stat in ("max", "p99")
    )


def cache_reads(positions: Sequence[Position]) -> dict[str, int]:
    cached = [p.cached_tokens for p in positions]
    return {"answers": len(cached), "read_cache": sum(1 for c in cached if c), "min": min(cached), "max": max(cached)}


def report(passes: Mapping[str, Sequence[Position]], reference: Sequence[int]) -> dict[str, Any]:
    """Every comparison, whether each cached one lies within the uncached spread, and each pass's cache reads."""
    spread = {f"{a} vs {b}": compare(passes[a], passes[b], reference) for a, b in UNCACHED_SPREAD}
    cached = {f"{a} vs {b}": compare(passes[a], passes[b], reference) for a, b in CACHED_VS_UNCACHED}
    return {
        "uncached_spread": spread,
        "cached_vs_uncached": cached,
        "within_uncached_spread": {name: within_spread(c, list(spread.values())) for name, c in cached.items()},
        "cache_reads": {name: cache_reads(positions) for name, positions in passes.items()},
    }


def report_from_raw(path: Path) -> dict[str, Any]:
    """`report` again from what the GPU run saved (teacher-raw.json, or gzipped)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as source:
        raw = json.load(source)
    passes = {
        name: [Position(p["sampled"], {int(k): v for k, v in p["top"].items()}, p["cached_tokens"]) for p in positions]
        for name, positions in raw["passes"].items()
    }
    return report(passes, raw["reference"])
