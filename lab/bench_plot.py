"""Table and plot of `vllm bench serve` results: prefill/decode against the aggregated baseline.

`python -m lab.bench_plot RESULTS.json... --png OUT.png` reads the result files `lab.smoke --bench`
saves (vLLM's own JSON: one file per concurrency, or a JSON object of them keyed by file name, named
`<label>-c<concurrency>.json`), prints a Markdown table and draws TTFT, time per output token and output
throughput against concurrency, one line per label.

The plot shows time per output token (TPOT: a request's decode time over its tokens after the first), not
the inter-token latency the client measures between stream chunks (ITL, in the table): Ray Serve LLM sends a
stream's tokens in batches every 50 ms (`MODEL_RESPONSE_BATCH_TIMEOUT_MS`, ray
`python/ray/llm/_internal/serve/constants.py`), so most chunk gaps are ~0 ms and the rest ~50 ms.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

RESULT_NAME = re.compile(r"(?P<label>[\w.]+)-c(?P<concurrency>\d+)\.json$")
# (column, key in vLLM's result JSON): vLLM reports latencies in ms, throughputs per second.
COLUMNS = (
    ("TTFT p50 ms", "p50_ttft_ms"),
    ("TTFT p99 ms", "p99_ttft_ms"),
    ("TPOT p50 ms", "p50_tpot_ms"),
    ("TPOT p99 ms", "p99_tpot_ms"),
    ("ITL p50 ms", "p50_itl_ms"),
    ("ITL p99 ms", "p99_itl_ms"),
    ("output tok/s", "output_throughput"),
    ("req/s", "request_throughput"),
)


def load_results(paths: list[Path]) -> dict[str, dict[int, dict[str, Any]]]:
    """{label: {concurrency: result}} from result files or JSON objects of them."""
    results: dict[str, dict[int, dict[str, Any]]] = {}
    for path in paths:
        document = json.loads(path.read_text())
        runs = document if RESULT_NAME.search(next(iter(document), "")) else {path.name: document}
        for name, run in runs.items():
            match = RESULT_NAME.search(name)
            if match is None:
                raise ValueError(f"{name}: not a <label>-c<concurrency>.json result")
            results.setdefault(match["label"], {})[int(match["concurrency"])] = run
    return results


def markdown_table(results: dict[str, dict[int, dict[str, Any]]]) -> str:
    header = ["setup", "concurrency", "requests", *(column for column, _ in COLUMNS)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, runs in results.items():
        for concurrency, run in sorted(runs.items()):
            cells = [label, str(concurrency), str(run["completed"])]
            cells += [f"{run[key]:.1f}" for _, key in COLUMNS]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(results: dict[str, dict[int, dict[str, Any]]], png: Path, title: str) -> Any:
    """Three panels against concurrency: TTFT, TPOT (p50 and p99) and output tokens/s; returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("p50_ttft_ms", "p99_ttft_ms", "TTFT (ms)"), ("p50_tpot_ms", "p99_tpot_ms", "time per output token (ms)"))
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for label, runs in results.items():
        levels = sorted(runs)
        for axis, (p50, p99, name) in zip(axes, panels, strict=False):
            line = axis.plot(levels, [runs[c][p50] for c in levels], marker="o", label=f"{label} p50")[0]
            axis.plot(
                levels,
                [runs[c][p99] for c in levels],
                marker="x",
                linestyle="--",
                color=line.get_color(),
                label=f"{label} p99",
            )
            axis.set_ylabel(name)
        axes[2].plot(levels, [runs[c]["output_throughput"] for c in levels], marker="o", label=label)
        axes[2].set_ylabel("output tokens/s")
    for axis in axes:
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent requests")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(png, dpi=110)
    return figure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+", help="vLLM bench serve result JSON files")
    parser.add_argument("--png", type=Path, help="write the plot here (needs matplotlib)")
    parser.add_argument("--title", default="vllm bench serve")
    args = parser.parse_args(argv)
    results = load_results(args.results)
    print(markdown_table(results))
    if args.png:
        plot(results, args.png, args.title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
