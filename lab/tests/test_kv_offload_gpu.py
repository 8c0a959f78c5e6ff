"""Issue 53's GPU tool, what runs without a GPU: the three engines it would start, the chat load's shape, the
counters it reads around each level."""

from __future__ import annotations

import json

from lab.kv_offload_gpu.chat import ChatPlan, Turn, summary
from lab.kv_offload_gpu.cli import L4_KV_CACHE_BYTES, main
from lab.kv_offload_gpu.run import added, counters

H100_MIB = 81559


def test_the_three_engines_differ_only_in_prefix_caching_and_the_tier(tiny_model_dir, tmp_path, capsys):
    argv = ["run", "--model-dir", str(tiny_model_dir), "--out", str(tmp_path / "o"), "--host-gpu-mib", str(H100_MIB)]
    assert main([*argv, "--dry-run"]) == 0
    engines = {name: e["engine_kwargs"] for name, e in json.loads(capsys.readouterr().out)["engines"].items()}
    assert engines["tier"] == {**engines["on"], "kv_offloading_size": 32}
    assert engines["on"] == {**engines["off"], "enable_prefix_caching": True, "mamba_cache_mode": "align"}
    assert {e["kv_cache_memory_bytes"] for e in engines.values()} == {L4_KV_CACHE_BYTES}
    assert not (tmp_path / "o").exists()


def test_the_l4_kv_bytes_are_the_earlier_runs_89_blocks_of_16_5_mib():
    """docs/bench/2026-12-06-prefix-cache/README.md: 89 blocks, 8 layers x 2,162,688 B a block, "1.44 GiB"."""
    assert L4_KV_CACHE_BYTES == 89 * 16.5 * 2**20
    assert round(L4_KV_CACHE_BYTES / 2**30, 2) == 1.43


def test_the_longest_turn_fits_the_stacks_context_and_the_histories_outgrow_the_l4():
    plan = ChatPlan()
    assert plan.longest_prompt() + plan.answer_len <= 4096
    for concurrency in (1, 4, 16):
        assert plan.conversations(concurrency) * plan.longest_prompt() > 26_038  # the L4's cached KV tokens


def test_a_levels_summary_counts_cached_prompt_tokens_and_output_rate():
    turns = [Turn(0, 0, 2000, 0, 32, 0.5, 1.0), Turn(0, 1, 2532, 2112, 32, 0.1, 0.6)]
    result = summary(turns, 2.0, 1, ChatPlan())
    assert result["cached_share"] == 2112 / 4532
    assert result["output_tok_s"] == 32.0
    assert result["later_turns_ttft_ms_p50"] == 100.0


def test_the_counters_include_the_tiers_and_are_summed_over_labels():
    text = "\n".join(
        [
            'vllm:external_prefix_cache_hits_total{engine="0"} 10.0',
            'vllm:external_prefix_cache_hits_total{engine="1"} 5.0',
            'vllm:kv_offload_load_bytes_total{engine="0"} 7.0',
            'vllm:prefix_cache_queries_total{engine="0"} 3.0',
            'vllm:num_requests_running{engine="0"} 2.0',
        ]
    )
    before = counters(text)
    assert before == {
        "vllm:external_prefix_cache_hits_total": 15.0,
        "vllm:kv_offload_load_bytes_total": 7.0,
        "vllm:prefix_cache_queries_total": 3.0,
    }
    assert added(before, {**before, "vllm:kv_offload_load_bytes_total": 9.0})["kv_offload_load_bytes_total"] == 2.0
