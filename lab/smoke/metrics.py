"""`--metrics-out`: Ray's metrics export scraped after the deploy, the load and the update, the names and the PD
samples written, with the package versions that produced them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from infra.observability.pd_queries import REQUESTS
from lab.smoke.deploy import http_request

# `ray start --metrics-export-port` serves every node's metrics in Prometheus' text format; the Serve and
# engine metrics reach it from the processes on each report interval (10 s by default).
METRICS_PORT = 8080
METRICS_URL = f"http://127.0.0.1:{METRICS_PORT}/metrics"
METRICS_REPORT_WAIT_S = 20.0
# A sample line: name, optional {labels} (quoted values may hold braces), value.
METRIC_SAMPLE_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
METRIC_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# vLLM's counters as Ray Serve LLM exports them (ray/llm/_internal/serve/engines/vllm/vllm_engine.py starts vLLM's
# Ray stat logger with log_engine_metrics): `ray_` before vLLM's name, one series per Ray worker of an engine.
ENGINE_COUNTER_PREFIX, COUNTER_SUFFIX = "ray_vllm_", "_total"
# What prefill/decode metrics are named after.
PD_METRIC_WORDS = ("nixl", "kv", "ttft", "time_to_first_token", "request")


def parse_metric_samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value for each sample of a Prometheus text exposition."""
    samples = {}
    for line in text.splitlines():
        match = METRIC_SAMPLE_LINE.match(line)
        if match and not line.startswith("#"):
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def sample_name(sample: str) -> str:
    return sample.split("{", 1)[0]


def sample_labels(sample: str) -> dict[str, str]:
    return dict(METRIC_LABEL.findall(sample.partition("{")[2]))


def engine_counts(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """What each engine's vLLM counters gained between two scrapes (`prefix_cache_hits`, `request_success`, ...),
    summed over their other labels, per Serve replica: vLLM's series carry the replica's Ray worker, which the
    replica's request counter names with its deployment and replica (as the dashboards join them,
    infra/observability/pd_queries.py `with_deployment`)."""
    replicas = {}
    for sample in after:
        if sample_name(sample) == REQUESTS:
            labels = sample_labels(sample)
            replicas[labels.get("WorkerId")] = f"{labels.get('deployment')} {labels.get('replica')}"
    gained: dict[str, dict[str, float]] = {}
    for sample, value in after.items():
        name = sample_name(sample)
        if name.startswith(ENGINE_COUNTER_PREFIX) and name.endswith(COUNTER_SUFFIX):
            worker = sample_labels(sample).get("WorkerId", "")
            engine = replicas.get(worker, f"worker {worker[:12]}")
            counter = name.removeprefix(ENGINE_COUNTER_PREFIX).removesuffix(COUNTER_SUFFIX)
            totals = gained.setdefault(engine, {})
            totals[counter] = totals.get(counter, 0.0) + value - before.get(sample, 0.0)
    return dict(sorted(gained.items()))


def scrape_metrics() -> dict[str, float]:
    code, text = http_request("GET", METRICS_URL)
    if code != 200:
        print(f"  metrics: {METRICS_URL} answered {code}: {text[:200]}", flush=True)
        return {}
    return parse_metric_samples(text)


def package_versions() -> str:
    found = []
    for package in ("ray", "vllm", "nixl-cu13"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def write_metrics(path: Path, scrapes: dict[str, dict[str, float]]) -> None:
    """The sorted exposition names of every scrape, and beside them the PD-related samples scrape by scrape."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [
        f"# Metric names on {METRICS_URL} (ray start --metrics-export-port={METRICS_PORT}), {package_versions()}",
        f"# command: python -m lab.smoke {' '.join(sys.argv[1:])}",
        f"# union of the scrapes: {', '.join(f'{stage} ({len(s)} samples)' for stage, s in scrapes.items())}",
    ]
    names = sorted({sample_name(sample) for samples in scrapes.values() for sample in samples})
    path.write_text("\n".join([*header, *names]) + "\n")
    stages = list(scrapes)
    related = sorted(
        {
            sample
            for samples in scrapes.values()
            for sample in samples
            if any(w in sample_name(sample).lower() for w in PD_METRIC_WORDS)
        }
    )
    rows = []
    for sample in related:
        values = [scrapes[stage].get(sample) for stage in stages]
        moved = len({v for v in values if v is not None}) > 1 or None in values
        cells = " ".join("-" if v is None else f"{v:g}" for v in values)
        rows.append(f"{'moved' if moved else 'same '} {cells} {sample}")
    samples_path = path.with_name(f"{path.stem}-pd-samples.txt")
    samples_path.write_text(
        "\n".join(
            [
                *header,
                f"# samples whose name holds one of {', '.join(PD_METRIC_WORDS)}; columns: moved/same, "
                f"{' '.join(stages)} ('-': not exported then), name{{labels}}",
                *rows,
            ]
        )
        + "\n"
    )
    print(f"  metrics: {len(names)} names written to {path}, {len(rows)} PD samples to {samples_path}", flush=True)
