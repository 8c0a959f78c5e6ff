"""The product's claims that rest on a record of the lab (lab/records/), held to the record."""

from __future__ import annotations

import json

from infra.settings.prefix_caching import AUTO_PREFILL, HYBRID
from tools.project import PROJECT_DIR


def test_auto_for_hybrid_models_rests_on_the_gpu_measurement():
    assert "805 against 533 ms" in AUTO_PREFILL[HYBRID].basis
    assert (PROJECT_DIR / "lab" / "records" / "bench" / "2026-12-06-prefix-cache" / "sweep.json").is_file()


def test_every_engines_prefix_counters_joined_their_replica_in_the_gpu_run():
    """The panel labels an engine's counters with its replica by the Ray worker both series carry
    (pd_queries.with_deployment). In the H200 run each level's counts were joined the same way from the real scrapes
    (lab/smoke/metrics.py `engine_counts`, which names an engine it cannot join `worker <id>`): every engine that
    counted found its deployment and replica."""
    counts = sorted(
        (PROJECT_DIR / "lab" / "records" / "bench" / "2026-12-06-prefix-routing").glob("prefix_*-engines.json")
    )
    engines = {engine for level in counts for engine in json.loads(level.read_text())}
    assert len(counts) == 8
    assert engines and all(engine.startswith("LLMServer:qwen3_5-9b ") for engine in engines), engines
