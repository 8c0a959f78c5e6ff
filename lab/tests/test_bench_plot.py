"""The load-sweep table reads vLLM's own `bench serve` result files."""

from __future__ import annotations

import json

import pytest

from lab import bench_plot


def result(concurrency: int) -> dict:
    """The keys vLLM 0.26 `vllm/benchmarks/serve.py` writes with --save-result and --metric-percentiles 50,99."""
    return {
        "completed": 4 * concurrency,
        "request_throughput": 1.5 * concurrency,
        "output_throughput": 100.0 * concurrency,
        "p50_ttft_ms": 20.0 + concurrency,
        "p99_ttft_ms": 40.0 + concurrency,
        "p50_tpot_ms": 5.0,
        "p99_tpot_ms": 7.0,
        "p50_itl_ms": 0.01,
        "p99_itl_ms": 50.0,
        "max_concurrency": concurrency,
    }


def test_table_has_one_row_per_setup_and_concurrency(tmp_path):
    for concurrency in (4, 1):
        (tmp_path / f"pd-c{concurrency}.json").write_text(json.dumps(result(concurrency)))
    (tmp_path / "bench-agg.json").write_text(json.dumps({"agg-c1.json": result(1)}))
    results = bench_plot.load_results(sorted(tmp_path.glob("*.json")))
    assert {label: sorted(runs) for label, runs in results.items()} == {"agg": [1], "pd": [1, 4]}
    table = bench_plot.markdown_table(results).splitlines()
    assert table[0].startswith("| setup | concurrency | requests | TTFT p50 ms")
    assert "| pd | 1 | 4 | 21.0 | 41.0 | 5.0 | 7.0 | 0.0 | 50.0 | 100.0 | 1.5 |" in table
    assert "| pd | 4 | 16 | 24.0 | 44.0 | 5.0 | 7.0 | 0.0 | 50.0 | 400.0 | 6.0 |" in table


def test_a_file_not_named_by_label_and_concurrency_is_refused(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(result(1)))
    with pytest.raises(ValueError, match=r"results\.json: not a <label>-c<concurrency>\.json result"):
        bench_plot.load_results([tmp_path / "results.json"])


def test_the_plot_draws_ttft_tpot_and_throughput_per_setup(tmp_path):
    """TPOT, not the client's chunk gaps: Ray Serve LLM batches a stream's tokens every 50 ms
    (ray 2.58.0 `python/ray/llm/_internal/serve/constants.py` MODEL_RESPONSE_BATCH_TIMEOUT_MS)."""
    results = {"pd": {1: result(1), 4: result(4)}, "agg": {1: result(1)}}
    figure = bench_plot.plot(results, tmp_path / "bench.png", "sweep")
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")
    ttft, tpot, throughput = figure.axes
    assert [ttft.get_ylabel(), tpot.get_ylabel(), throughput.get_ylabel()] == [
        "TTFT (ms)",
        "time per output token (ms)",
        "output tokens/s",
    ]
    assert list(tpot.lines[0].get_ydata()) == [5.0, 5.0] and list(tpot.lines[1].get_ydata()) == [7.0, 7.0]
    assert [line.get_label() for line in throughput.lines] == ["pd", "agg"]
