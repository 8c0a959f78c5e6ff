"""The prefill/decode figures of a live stack, read from its Prometheus: `tools.verify`'s pd_metrics check, with the
dashboard's queries over everything since each replica started (no rate window, so one request is enough to count),
answered in Prometheus' instant-query shape
(https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries)."""

from __future__ import annotations

import json
import math
import re
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode

from infra.observability import pd_queries as q
from infra.serving.serve_config import PD_SIDES

QUERY_PATH = "/api/v1/query"


class PrometheusError(Exception):
    """Prometheus did not answer a query with a result."""


def query(base_url: str, expr: str, timeout_s: float) -> list[tuple[dict[str, str], float]]:
    """Each series of an instant query, with its value."""
    url = f"{base_url}{QUERY_PATH}?{urlencode({'query': expr})}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.load(response)
    except (OSError, ValueError) as error:
        raise PrometheusError(f"{QUERY_PATH} did not answer: {error}") from error
    if body.get("status") != "success":
        raise PrometheusError(f"query {expr!r} failed: {body.get('error', body)}")
    return [(item["metric"], float(item["value"][1])) for item in body["data"]["result"]]


def side_of(deployment: str) -> str | None:
    """prefill or decode, from the Serve deployment's name (Prefill:<model>, Decode:<model>)."""
    return next((side for side, pattern in q.SIDE_DEPLOYMENTS.items() if re.fullmatch(pattern, deployment)), None)


# Figure -> its query for the Serve app (each series labelled with its deployment).
FIGURES: Mapping[str, Callable[[str], str]] = {
    "requests": lambda app: q.requests_per_deployment(app, window=None),
    "ttft_p50_s": lambda app: q.quantile_per_side(q.TTFT, 0.5, app, window=None),
    "ttft_p99_s": lambda app: q.quantile_per_side(q.TTFT, 0.99, app, window=None),
    "tpot_p50_s": lambda app: q.quantile_per_side(q.TPOT, 0.5, app, window=None),
    "kv_transfers": lambda app: q.kv_transfers_per_side(app, window=None),
    "kv_bytes": lambda app: q.kv_bytes_per_side(app, window=None),
    "kv_transfer_mean_s": lambda app: q.mean_per_side(q.KV_XFER_TIME, app, window=None),
    "kv_failed_transfers": lambda app: q.counter_per_side(q.KV_FAILED_TRANSFERS, app, window=None),
}


@dataclass(frozen=True)
class PdFigures:
    by_side: dict[str, dict[str, float]] = field(default_factory=dict)

    def get(self, side: str, figure: str) -> float:
        """The side's figure; 0 when Prometheus has no series for it (nothing counted yet)."""
        return self.by_side.get(side, {}).get(figure, 0.0)

    def problems(self) -> list[str]:
        """What says the PD pair is not healthy: a side that served nothing, no KV transfer, failed transfers."""
        found = [f"the {side} side served no request" for side in PD_SIDES if not self.get(side, "requests")]
        if not any(self.get(side, "kv_transfers") for side in PD_SIDES):
            found.append("no NIXL KV transfer was counted on either side")
        failed = {side: self.get(side, "kv_failed_transfers") for side in PD_SIDES}
        found += [f"{count:g} NIXL transfers failed on the {side} side" for side, count in failed.items() if count]
        return found

    def lines(self) -> list[str]:
        return [
            f"{side}: {self.get(side, 'requests'):g} requests, TTFT p50 {self.get(side, 'ttft_p50_s'):.3f} s "
            f"p99 {self.get(side, 'ttft_p99_s'):.3f} s, TPOT p50 {self.get(side, 'tpot_p50_s'):.4f} s, "
            f"KV transfers {self.get(side, 'kv_transfers'):g} ({self.get(side, 'kv_bytes') / 1e6:.1f} MB, "
            f"mean {self.get(side, 'kv_transfer_mean_s') * 1000:.1f} ms), "
            f"failed {self.get(side, 'kv_failed_transfers'):g}"
            for side in PD_SIDES
        ]


def read_figures(base_url: str, app: str, timeout_s: float) -> PdFigures:
    by_side: dict[str, dict[str, float]] = {}
    for figure, expr in FIGURES.items():
        for labels, value in query(base_url, expr(app), timeout_s):
            side = side_of(labels.get("deployment", ""))
            if side is not None and not math.isnan(value):
                by_side.setdefault(side, {})[figure] = value
    return PdFigures(by_side)
