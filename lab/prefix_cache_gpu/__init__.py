"""Prefix caching on the default hybrid model, measured on a GPU host: is it correct, and is it faster?

`python -m lab.prefix_cache_gpu run` starts two `vllm serve` engines of the stack's aggregated engine (the smoke's
baseline: the decode side's engine without its KV connector, lab/smoke/overrides.py `aggregated_overrides`), each
held to an L4's memory, one with `enable_prefix_caching` off (what the stack serves today) and one with it on, then:

1. correctness, teacher-forced: the same token sequences go to both engines as prompts with `max_tokens` 1 and
   `logprobs` k, so each answer is the engine's next-token distribution after exactly those tokens (`teacher`); the
   cached engine reads its prefix from the cache (vLLM skips the cache for requests that ask for
   `prompt_logprobs`: vllm 0.26.0 `vllm/sampling_params.py` sets `skip_reading_prefix_cache`, which
   `vllm/v1/core/kv_cache_manager.py` `get_computed_blocks` honours). The cached engine's differences from the
   uncached one are set against the spread of the uncached engine with itself (one request at a time, batched);
2. speed: vLLM's own `vllm bench serve` (its `vllm.benchmarks.serve.main`, in this process) at each concurrency
   level, a shared-prefix workload (`prefix_repetition`) and one without (`random`), against both engines in
   turn, with the engine's prefix-cache counters read from `/metrics` before and after each level (`sweep`).

`python -m lab.prefix_cache_gpu serve-config` writes the stack's serve config on a machine with the deploy SDKs
(requirements.txt); the GPU host needs only requirements-gpu.txt's vLLM. `run --dry-run` prints every command and
request plan and starts nothing.
"""
