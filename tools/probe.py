"""What `tools.verify` (a deployed stack) and `lab.smoke` (one GPU host) both do: call the model through its
OpenAI-compatible API with the `openai` package (as Ray Serve LLM serves it: server-sent events,
`stream_options.include_usage`), find NIXL's backend line, and report each check."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import openai

# NIXL logs the transport it instantiated once per engine (vLLM's NixlConnector, nixl's _api.py).
NIXL_BACKEND_LINE = re.compile(r"Backend (LIBFABRIC|UCX) was instantiated")


class EmptyCompletion(Exception):
    """The endpoint answered a chat completion without any content."""


@dataclass(frozen=True)
class ChatTiming:
    ttft_s: float
    total_s: float
    completion_tokens: int
    counted_from: str  # "usage" when the server reported it, else "chunks" (a lower bound: chunks batch tokens)

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.total_s

    @property
    def decode_tokens_per_s(self) -> float:
        """Tokens after the first, over the time after the first: the decode engine's pace."""
        return (self.completion_tokens - 1) / max(self.total_s - self.ttft_s, 1e-9)


def client(base_url: str, timeout_s: float, api_key: str | None = None) -> openai.OpenAI:
    """A client of the serve endpoint (`.../v1`), with the stack's API key when it asks for one (`serveApiKey`);
    a failure is reported, not retried."""
    return openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0)


def model_ids(api: openai.OpenAI) -> list[str]:
    return [entry.id for entry in api.models.list()]


def stream_chat(
    api: openai.OpenAI, model: str, prompt: str, max_tokens: int, extra_body: Mapping[str, Any] | None = None
) -> tuple[ChatTiming, str]:
    """One streamed chat completion, timed to its first content token and to its last; raises if no content came.

    `extra_body` carries the server's own sampling parameters (vLLM's `ignore_eos`).
    """
    start = time.perf_counter()
    first_token_at: float | None = None
    pieces: list[str] = []
    usage_tokens: int | None = None
    chunks = api.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body=dict(extra_body or {}),
    )
    for chunk in chunks:
        if chunk.usage is not None:
            usage_tokens = chunk.usage.completion_tokens
        for choice in chunk.choices:
            if choice.delta.content:
                first_token_at = first_token_at or time.perf_counter()
                pieces.append(choice.delta.content)
    end = time.perf_counter()
    if first_token_at is None:
        raise EmptyCompletion("the chat completion returned no tokens")
    timing = ChatTiming(
        ttft_s=first_token_at - start,
        total_s=end - start,
        completion_tokens=usage_tokens or len(pieces),
        counted_from="usage" if usage_tokens else "chunks",
    )
    return timing, "".join(pieces)


# --- reporting ---


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    summary: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recorded:
    name: str
    result: CheckResult
    required: bool


@dataclass
class Report:
    """Checks in the order they ran, each printed as it is recorded; a failed optional check only warns."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    checks: list[Recorded] = field(default_factory=list)

    def record(self, name: str, result: CheckResult, required: bool = True) -> bool:
        self.checks.append(Recorded(name, result, required))
        verdict = "PASS" if result.passed else "FAIL" if required else "WARN"
        print(f"[{verdict}] {name}: {result.summary}", file=self.out, flush=True)
        for line in result.details:
            print(f"      {line}", file=self.out, flush=True)
        return result.passed

    @property
    def failed(self) -> list[str]:
        """Names of the required checks that failed."""
        return [check.name for check in self.checks if check.required and not check.result.passed]

    @property
    def ok(self) -> bool:
        return bool(self.checks) and not self.failed

    def verdict(self, label: str) -> str:
        required = sum(check.required for check in self.checks)
        if self.ok:
            return f"{label}: PASS (all {required} required checks passed)"
        return f"{label}: FAIL ({len(self.failed)} of {required} required checks failed: {', '.join(self.failed)})"
