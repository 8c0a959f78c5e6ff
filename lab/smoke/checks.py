"""The OpenAI-compatible API served: the models listed, a streamed chat completion timed, then `--requests` more."""

from __future__ import annotations

import statistics

import openai

from lab.smoke import deploy
from tools.probe import CheckResult, EmptyCompletion, Report, client, model_ids, stream_chat

PROMPT_WORDS = (
    "Prefill computes the key and value cache of the whole prompt on one GPU, then decode reads it "
    "over NIXL and generates the answer token by token on the other GPU. "
) * 4


def run_requests(
    report: Report, model_id: str, max_tokens: int, count: int, timeout_s: float = 120, api_key: str | None = None
) -> None:
    api = client(f"{deploy.SERVE_URL}/v1", timeout_s, api_key)
    try:
        models = model_ids(api)
    except openai.OpenAIError as error:
        report.record("models", CheckResult(False, f"/v1/models did not answer: {error}"))
        return
    report.record("models", CheckResult(model_id in models, f"/v1/models lists {models}"))
    timings = []
    for i in range(count + 1):
        # A different first block per request: no prefix-cache hit hides the KV transfer.
        prompt = f"Request {i} of the smoke test. {PROMPT_WORDS}"
        try:
            # Random weights may emit EOS at once; a fixed length (vLLM's ignore_eos) makes tokens/s comparable.
            timing, _ = stream_chat(api, model_id, prompt, max_tokens, extra_body={"ignore_eos": True})
        except (openai.OpenAIError, EmptyCompletion) as error:
            report.record("chat", CheckResult(False, f"request {i} failed: {error}"))
            return
        kind = "first (warm-up; in PD it includes the NIXL handshake)" if i == 0 else f"timed {i}/{count}"
        print(
            f"  chat {kind}: TTFT {timing.ttft_s * 1000:.1f} ms, {timing.completion_tokens} tokens "
            f"({timing.counted_from}) in "
            f"{timing.total_s:.3f} s, {timing.tokens_per_s:.1f} tok/s, decode {timing.decode_tokens_per_s:.1f} tok/s",
            flush=True,
        )
        timings.append(timing)
    measured = timings[1:] or timings
    ttft = statistics.median(t.ttft_s for t in measured) * 1000
    tps = statistics.median(t.tokens_per_s for t in measured)
    decode_tps = statistics.median(t.decode_tokens_per_s for t in measured)
    report.record(
        "chat",
        CheckResult(
            all(t.completion_tokens > 0 for t in timings),
            f"streamed {len(timings)} completions ({max_tokens} tokens asked, ignore_eos); median of {len(measured)}: "
            f"TTFT {ttft:.1f} ms, {tps:.1f} tok/s end to end, {decode_tps:.1f} tok/s after the first token "
            f"(first request TTFT {timings[0].ttft_s * 1000:.1f} ms)",
        ),
    )
