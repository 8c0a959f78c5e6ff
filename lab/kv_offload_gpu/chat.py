"""A multi-turn chat load whose conversations outgrow the GPU's KV cache.

Each conversation opens with a random prompt of `first_len` tokens; every later turn sends the whole history again:
the previous prompt, the engine's own answer (its token ids, `return_token_ids`, vllm/entrypoints/openai/completion/
protocol.py) and a new random user message of `turn_len` tokens. Every conversation waits for its own answer before
its next turn and all wait at one first-come gate of `concurrency`, so the turns go round the conversations: between
two turns of one conversation every other conversation's turn runs, and the working set is every conversation's
history, larger than the L4's KV cache. Token ids above the tokenizer's special ones, greedy, a fixed answer length.
Each level draws its own conversations (its own seed), the same for every engine.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lab.prefix_cache_gpu.teacher import FIRST_PLAIN_ID, percentile


@dataclass(frozen=True)
class ChatPlan:
    first_len: int = 2000
    turn_len: int = 500
    answer_len: int = 32
    turns: int = 4
    seed: int = 53

    def conversations(self, concurrency: int) -> int:
        """48 conversations at 16 concurrent, 16 below: each level's histories sum past the L4's ~26k KV tokens."""
        return max(16, 3 * concurrency)

    def longest_prompt(self) -> int:
        return self.first_len + (self.turns - 1) * (self.answer_len + self.turn_len)


@dataclass(frozen=True)
class Turn:
    conversation: int
    turn: int
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    ttft_s: float
    latency_s: float


def random_tokens(rng: random.Random, count: int, vocab_size: int) -> list[int]:
    return [rng.randrange(FIRST_PLAIN_ID, vocab_size) for _ in range(count)]


def body(model: str, prompt: Sequence[int], answer_len: int) -> dict[str, Any]:
    return {
        "model": model,
        "prompt": list(prompt),
        "max_tokens": answer_len,
        "min_tokens": answer_len,
        "ignore_eos": True,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_token_ids": True,
    }


async def one_turn(session: Any, url: str, request: dict[str, Any]) -> tuple[list[int], dict[str, Any], float, float]:
    """(answer token ids, usage, seconds to the first token, seconds in all) of one streamed completion."""
    start = time.monotonic()
    first: float | None = None
    tokens: list[int] = []
    usage: dict[str, Any] = {}
    async with session.post(url, json=request) as answer:
        answer.raise_for_status()
        async for raw in answer.content:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices", []):
                if choice.get("token_ids"):
                    first = first if first is not None else time.monotonic() - start
                    tokens += choice["token_ids"]
    return tokens, usage, first if first is not None else float("nan"), time.monotonic() - start


async def run_level(url: str, model: str, plan: ChatPlan, concurrency: int, vocab_size: int) -> dict[str, Any]:
    import aiohttp

    rng = random.Random(plan.seed * 1000 + concurrency)
    count = plan.conversations(concurrency)
    histories = [random_tokens(rng, plan.first_len, vocab_size) for _ in range(count)]
    user_turns = [[random_tokens(rng, plan.turn_len, vocab_size) for _ in range(plan.turns - 1)] for _ in range(count)]
    gate = asyncio.Semaphore(concurrency)
    turns: list[Turn] = []

    async def conversation(index: int, session: Any) -> None:
        history = histories[index]
        for turn in range(plan.turns):
            async with gate:
                answer, usage, ttft, latency = await one_turn(session, url, body(model, history, plan.answer_len))
            details = usage.get("prompt_tokens_details") or {}
            turns.append(Turn(index, turn, len(history), details.get("cached_tokens") or 0, len(answer), ttft, latency))
            if turn + 1 < plan.turns:
                history = history + answer + user_turns[index][turn]

    start = time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as session:
        await asyncio.gather(*(conversation(i, session) for i in range(count)))
    return summary(turns, time.monotonic() - start, concurrency, plan)


def summary(turns: Sequence[Turn], seconds: float, concurrency: int, plan: ChatPlan) -> dict[str, Any]:
    ttfts = [t.ttft_s * 1000 for t in turns]
    later = [t for t in turns if t.turn > 0]
    prompt = sum(t.prompt_tokens for t in turns)
    cached = sum(t.cached_tokens for t in turns)
    return {
        "concurrency": concurrency,
        "plan": asdict(plan),
        "conversations": plan.conversations(concurrency),
        "requests": len(turns),
        "seconds": seconds,
        "ttft_ms_p50": percentile(ttfts, 50),
        "ttft_ms_p99": percentile(ttfts, 99),
        "later_turns_ttft_ms_p50": percentile([t.ttft_s * 1000 for t in later], 50) if later else None,
        "output_tok_s": sum(t.output_tokens for t in turns) / seconds,
        "prompt_tokens": prompt,
        "cached_prompt_tokens": cached,
        "cached_share": cached / prompt if prompt else None,
        "turns": [asdict(t) for t in turns],
    }


def chat_level(port: int, model: str, plan: ChatPlan, concurrency: int, vocab_size: int) -> dict[str, Any]:
    return asyncio.run(run_level(f"http://127.0.0.1:{port}/v1/completions", model, plan, concurrency, vocab_size))
