"""The host-memory KV tier on one GPU (issue 53): three `vllm serve` engines of the stack's aggregated engine.

`python -m lab.kv_offload_gpu run` starts, side by side on one GPU, the default model's engine as the stack serves
it today (prefix caching off), with prefix caching, and with prefix caching and a host-memory tier
(`kv_offloading_size`, the aggregated baseline's form of the prefill side's prefillKvOffloadGiB), each with the KV
memory of an L4. Then the teacher-forced logprob comparison of the tiered engine against the uncached one
(tools.prefix_cache_gpu.teacher, the GPU's cache flushed before each prompt so that its prefix comes back from host
memory), then a multi-turn chat load (lab/kv_offload_gpu/chat.py) at each concurrency level. The two serve configs
are the ones the 2026-12-07 run used (lab/records/2026-12-07-kv-offload/cfg/): the stack now refuses the tier for
the hybrid default, after that run's engine crashes.
"""
