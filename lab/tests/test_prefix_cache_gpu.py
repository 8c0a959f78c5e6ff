"""Issue 37's GPU tool, what runs without a GPU: its command line, the engines it would start, the requests and the
statistics of the teacher-forced comparison, the counters it reads around each sweep level."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from lab import bench_plot
from lab.prefix_cache_gpu import sweep, teacher
from lab.prefix_cache_gpu.cli import main, parse_args
from lab.prefix_cache_gpu.engine import aggregated_engine, engine_flags, serve_command
from lab.prefix_cache_gpu.teacher import Position
from lab.smoke.host import HostFacts
from lab.tests.vllm_source import VLLM
from tests.rayservice_parts import serve_config

# An L4 as nvidia-smi reports it, an H100 80GB HBM3 likewise.
L4_MIB, H100_MIB = 23034, 81559
NO_FLASHINFER = HostFacts(has_efa=False, has_flashinfer=False)


def run_args(*extra: str) -> list[str]:
    return ["run", "--serve-config", "c.json", "--model-dir", "m", "--out", "o", *extra]


def test_levels_run_in_the_order_given_and_must_be_positive(capsys):
    assert parse_args(run_args("--levels", "16,64,4,1")).levels == [16, 64, 4, 1]
    with pytest.raises(SystemExit):
        parse_args(run_args("--levels", "16,0"))
    assert "every level must be at least 1" in capsys.readouterr().err


def test_an_unknown_part_is_refused_naming_the_allowed_ones(capsys):
    with pytest.raises(SystemExit):
        parse_args(run_args("--parts", "teacher,router"))
    assert "router: allowed are teacher,sweep" in capsys.readouterr().err


def test_engine_kwargs_are_spelled_as_vllm_serve_flags():
    """vllm 0.26.0 `vllm/engine/arg_utils.py` `EngineArgs.add_cli_args`: each field as --name-with-dashes, booleans as
    argparse.BooleanOptionalAction (--x / --no-x), dict fields parsed from JSON (checked against vLLM 0.26.0's own
    parser: lab/records/bench/2026-12-06-prefix-cache/README.md)."""
    flags = engine_flags(
        {"max_num_seqs": 32, "language_model_only": True, "enforce_eager": False, "additional_config": {"a": "b"}}
    )
    assert flags == [
        "--max-num-seqs",
        "32",
        "--language-model-only",
        "--no-enforce-eager",
        "--additional-config",
        '{"a": "b"}',
    ]


def test_the_two_engines_differ_only_in_prefix_caching_and_port(dev, tiny_model_dir):
    engine, _ = aggregated_engine(serve_config(dev), tiny_model_dir, (L4_MIB, H100_MIB), NO_FLASHINFER)
    off, on = serve_command(engine, 8100, False), serve_command(engine, 8200, True)
    assert [(a, b) for a, b in zip(off, on, strict=True) if a != b] == [
        ("8100", "8200"),
        ("--no-enable-prefix-caching", "--enable-prefix-caching"),
    ]


def test_each_engine_gets_vllms_default_share_of_an_l4(dev, tiny_model_dir):
    """0.92 (vLLM 0.26 `CacheConfig.gpu_memory_utilization`) of 23034 MiB, as a share of the host GPU's memory, and
    the batch limit vLLM picks below 70 GiB (lab/smoke/overrides.py); the stack's context and CUDA graphs stay."""
    engine, _ = aggregated_engine(serve_config(dev), tiny_model_dir, (L4_MIB, H100_MIB), NO_FLASHINFER)
    kwargs = engine["engine_kwargs"]
    assert kwargs["gpu_memory_utilization"] == round(0.92 * L4_MIB / H100_MIB, 4)
    assert kwargs["max_num_batched_tokens"] == 2048
    stack = serve_config(dev)["applications"][0]["args"]["decode_config"]["engine_kwargs"]
    assert kwargs["max_model_len"] == stack["max_model_len"] and kwargs["max_num_seqs"] == stack["max_num_seqs"]
    assert "enforce_eager" not in kwargs


def test_the_dry_run_prints_the_plan_and_starts_nothing(dev, tiny_model_dir, tmp_path, capsys):
    config = tmp_path / "serve-config.json"
    config.write_text(json.dumps(serve_config(dev)))
    out = tmp_path / "out"
    argv = ["run", "--serve-config", str(config), "--model-dir", str(tiny_model_dir), "--out", str(out)]
    assert main([*argv, "--host-gpu-mib", str(H100_MIB), "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["serve"]["on"][plan["serve"]["on"].index("serve") + 1] == str(tiny_model_dir)
    assert plan["bench_example"][:3] == ["vllm", "bench", "serve"]
    assert not out.exists()


def test_teacher_prompts_share_each_prefix_and_stay_above_the_special_tokens():
    plan = teacher.TeacherPlan(prefixes=2, prompts_per_prefix=3, prefix_len=10, suffix_len=4)
    prompts = teacher.prompts(plan, vocab_size=100)
    assert len(prompts) == 6 and all(len(p) == 14 for p in prompts)
    assert prompts[0][:10] == prompts[2][:10] != prompts[3][:10]
    assert min(min(p) for p in prompts) >= teacher.FIRST_PLAIN_ID


def test_each_step_of_a_continuation_is_one_request_for_one_token():
    bodies = teacher.forced_bodies("m", [[1, 2]], [[7, 8, 9]], top_k=20)
    assert [b["prompt"] for b in bodies] == [[1, 2], [1, 2, 7], [1, 2, 7, 8]]
    assert {(b["max_tokens"], b["logprobs"], b["temperature"]) for b in bodies} == {(1, 20, 0)}


def test_an_answer_is_read_by_token_id_with_its_cached_prompt_tokens():
    """vLLM 0.26 `vllm/entrypoints/openai/completion/protocol.py`: `return_tokens_as_token_ids` spells tokens as
    `token_id:N`; with `--enable-prompt-tokens-details` the usage holds `prompt_tokens_details.cached_tokens`."""
    answer = {
        "choices": [
            {"logprobs": {"tokens": ["token_id:42"], "top_logprobs": [{"token_id:42": -0.5, "token_id:7": -1.0}]}}
        ],
        "usage": {"prompt_tokens": 1700, "prompt_tokens_details": {"cached_tokens": 1584}},
    }
    assert teacher.position(answer) == Position(sampled=42, top={42: -0.5, 7: -1.0}, cached_tokens=1584)
    with pytest.raises(ValueError, match="not a token_id:N token"):
        teacher.token_id("hello")


def test_percentile_interpolates_between_ranks():
    assert teacher.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert teacher.percentile([float(v) for v in range(101)], 99) == 99.0


def test_the_comparison_measures_the_teacher_tokens_logprob_argmax_and_top_k():
    a = [Position(1, {1: -0.1, 2: -0.2}, 0), Position(3, {3: -0.3, 4: -0.4}, 0), Position(5, {5: -0.5, 6: -0.6}, 0)]
    b = [Position(1, {1: -0.13, 2: -0.2}, 9), Position(4, {4: -0.3, 3: -0.42}, 9), Position(5, {5: -0.5, 9: -0.6}, 9)]
    result = teacher.compare(a, b, reference=[1, 3, 7])
    assert result["positions"] == 3 and result["reference_missing"] == 1
    assert result["abs_delta_logprob"]["max"] == pytest.approx(0.12)
    assert result["abs_delta_logprob"]["p50"] == pytest.approx(0.075)
    assert result["abs_delta_histogram"] == {"<=0.01": 0, "<=0.05": 1, "<=0.1": 0, "<=0.15": 1, "<=0.2": 0, ">0.2": 0}
    assert result["argmax_agreement"] == pytest.approx(2 / 3)
    assert result["argmax_parted_top2_margin_max"] == pytest.approx(0.12)
    assert result["top_k_overlap"] == {"mean": pytest.approx(5 / 6), "min": 0.5}


def test_the_report_is_made_again_from_the_saved_raw_answers(tmp_path):
    positions = {"sampled": 1, "top": {"1": -0.1, "2": -0.3}, "cached_tokens": 0}
    other = {"sampled": 1, "top": {"1": -0.2, "2": -0.3}, "cached_tokens": 528}
    passes = {name: [positions] for name in teacher.UNCACHED_PASSES} | {name: [other] for name in teacher.CACHED_PASSES}
    raw = tmp_path / "teacher-raw.json.gz"
    with gzip.open(raw, "wt") as sink:
        json.dump({"reference": [1], "passes": passes}, sink)
    result = teacher.report_from_raw(raw)
    assert result["cached_vs_uncached"]["on.seq1 vs off.seq1"]["abs_delta_logprob"]["max"] == pytest.approx(0.1)
    assert result["within_uncached_spread"]["on.seq1 vs off.seq1"] is False
    assert result["cache_reads"]["on.seq2"] == {"answers": 1, "read_cache": 1, "min": 528, "max": 528}


def test_the_cached_path_is_within_the_spread_only_at_or_below_its_max_and_p99():
    spread = [{"abs_delta_logprob": {"max": 0.2, "p99": 0.1}}, {"abs_delta_logprob": {"max": 0.3, "p99": 0.05}}]
    assert teacher.within_spread({"abs_delta_logprob": {"max": 0.3, "p99": 0.1}}, spread)
    assert not teacher.within_spread({"abs_delta_logprob": {"max": 0.31, "p99": 0.01}}, spread)
    assert not teacher.within_spread({"abs_delta_logprob": {"max": 0.01, "p99": 0.11}}, spread)


def test_the_sweep_reads_counters_vllm_declares():
    """`vllm serve`'s /metrics names each counter as vLLM 0.26's `vllm/v1/metrics/loggers.py` declares it
    (`self._counter_cls(name="vllm:...")`), and prometheus_client's text format adds `_total`: a name the engine does
    not export would read as zero in every level."""
    declared = set(re.findall(r'self\._counter_cls\(\s*name="(vllm:[a-z_]+)"', (VLLM / "loggers.py").read_text()))
    assert {name.removesuffix("_total") for name in sweep.COUNTERS} <= declared


def test_counters_are_summed_over_label_sets_and_a_level_gives_its_hit_rate():
    """vLLM 0.26 `vllm/v1/metrics/loggers.py` names the counters; prometheus_client's text format adds `_total`."""

    def text(queries: float, hits: float) -> str:
        return (
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries\n"
            f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {queries}\n'
            f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hits}\n'
            'vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 3.0\n'
            'vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 1.0\n'
        )

    before, after = sweep.counters(text(1000.0, 0.0)), sweep.counters(text(4200.0, 1584.0))
    assert before["vllm:request_success_total"] == 4.0
    counts = sweep.level_counts(before, after)
    assert counts["prefix_cache_queries_total"] == 3200.0 and counts["hit_rate"] == pytest.approx(1584 / 3200)
    assert sweep.level_counts(before, before)["hit_rate"] is None


def test_each_level_saves_a_result_bench_plot_reads_with_prompts_of_its_own():
    def argv(engine: str, concurrency: int) -> list[str]:
        return sweep.bench_argv(sweep.Workload(), "prefix", engine, concurrency, 200, "u", "m", "t", "r")

    name = argv("on", 16)[argv("on", 16).index("--result-filename") + 1]
    match = bench_plot.RESULT_NAME.search(name)
    assert match is not None and (match["label"], match["concurrency"]) == ("prefix_on", "16")

    def seed(args: list[str]) -> str:
        return args[args.index("--seed") + 1]

    assert seed(argv("on", 16)) == seed(argv("off", 16)) != seed(argv("on", 4))


def test_both_workloads_have_the_same_prompt_length():
    workload = sweep.Workload()
    prefix, random_ = workload.dataset_args("prefix"), workload.dataset_args("random")
    lengths = {flag: int(value) for flag, value in zip(prefix[2::2], prefix[3::2], strict=True)}
    shared = lengths["--prefix-repetition-prefix-len"] + lengths["--prefix-repetition-suffix-len"]
    assert int(random_[random_.index("--random-input-len") + 1]) == shared
