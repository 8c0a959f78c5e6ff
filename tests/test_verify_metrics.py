"""`tools.verify`'s pd_metrics check against a local server speaking Prometheus' instant-query API.

The server answers each of `tools.pd_metrics.FIGURES`' queries with the series a test gives it, in the shape
Prometheus returns (https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.openai_server import send_json
from tests.promql import known_metrics, metrics_read, parse
from tests.test_verify import OUTPUTS_FILE, RecordedCluster, load
from tools.pd_metrics import FIGURES
from tools.verify import main
from tools.verify_access import StackOutputs

APP = "ray-llm"
DEPLOYMENTS = {"prefill": "Prefill:qwen3_5-9b", "decode": "Decode:qwen3_5-9b"}
# A healthy PD pair after a few requests: decode reads the KV cache from prefill, so NIXL counts on decode.
HEALTHY = {
    "prefill": {"requests": 3, "ttft_p50_s": 0.21, "ttft_p99_s": 0.4, "tpot_p50_s": 0.0, "kv_failed_transfers": 0},
    "decode": {
        "requests": 3,
        "ttft_p50_s": 0.05,
        "ttft_p99_s": 0.09,
        "tpot_p50_s": 0.0123,
        "kv_transfers": 3,
        "kv_bytes": 6_000_000,
        "kv_transfer_mean_s": 0.004,
        "kv_failed_transfers": 0,
    },
}


class PrometheusHandler(BaseHTTPRequestHandler):
    server: PrometheusServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        (expr,) = parse_qs(url.query)["query"]
        self.server.queries.append(expr)
        figure = self.server.figure_of.get(expr)
        if url.path != "/api/v1/query" or figure is None:
            body = {"status": "error", "errorType": "bad_data", "error": f"unexpected query {expr}"}
        else:
            result = [
                {"metric": {"deployment": DEPLOYMENTS[side]}, "value": [1764600000.0, str(figures[figure])]}
                for side, figures in self.server.figures.items()
                if figure in figures
            ]
            body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        send_json(self, body)


class PrometheusServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), PrometheusHandler)
        self.figure_of = {expr(APP): figure for figure, expr in FIGURES.items()}
        self.figures: dict[str, dict[str, float]] = {}
        self.queries: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def prometheus() -> Iterator[PrometheusServer]:
    server = PrometheusServer()
    server.figures = {side: dict(figures) for side, figures in HEALTHY.items()}
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def run_verify(api, prometheus, *args: str) -> int:
    command = ["--outputs-file", str(OUTPUTS_FILE), "--base-url", api.base_url]
    command += ["--prometheus-url", prometheus.base_url, "--metrics-wait", "0", *args]
    return main(command, connect=lambda kubeconfig: RecordedCluster())


def test_a_healthy_pd_pair_passes_with_its_figures(api, prometheus, capsys):
    assert run_verify(api, prometheus) == 0
    out = capsys.readouterr().out
    assert "[6/6] Prometheus: each PD side's requests, TTFT, TPOT and KV transfers" in out
    assert "[PASS] pd_metrics: decode TTFT p50 0.050 s, TPOT p50 0.0123 s; 3 KV transfers on decode" in out
    assert "decode: 3 requests, TTFT p50 0.050 s p99 0.090 s, TPOT p50 0.0123 s, KV transfers 3 (6.0 MB" in out
    assert out.rstrip().endswith("VERDICT: PASS (all 6 required checks passed)")
    assert sorted(prometheus.queries) == sorted(expr(APP) for expr in FIGURES.values())


def test_a_side_that_served_nothing_fails(api, prometheus, capsys):
    """The failure users found only by measuring: a PD app whose prefill side served 0 requests."""
    del prometheus.figures["prefill"]
    assert run_verify(api, prometheus) == 1
    assert "[FAIL] pd_metrics: the prefill side served no request" in capsys.readouterr().out


def test_no_kv_transfer_fails(api, prometheus, capsys):
    for figures in prometheus.figures.values():
        figures.pop("kv_transfers", None)
    assert run_verify(api, prometheus) == 1
    assert "no NIXL KV transfer was counted on either side" in capsys.readouterr().out


def test_a_failed_kv_transfer_fails(api, prometheus, capsys):
    prometheus.figures["decode"]["kv_failed_transfers"] = 2
    assert run_verify(api, prometheus) == 1
    assert "2 NIXL transfers failed on the decode side" in capsys.readouterr().out


def test_prometheus_down_fails_the_check_not_the_run(api, prometheus, capsys):
    prometheus.shutdown()
    prometheus.server_close()
    assert run_verify(api, prometheus) == 1
    out = capsys.readouterr().out
    assert "[FAIL] pd_metrics: Prometheus did not answer" in out
    assert "[PASS] completion" in out


def test_without_prometheus_the_check_is_not_run(api, capsys):
    """A stack without observability exports no prometheusEndpoint (the recorded outputs predate it)."""
    assert "prometheusEndpoint" not in load("outputs.json")
    command = ["--outputs-file", str(OUTPUTS_FILE), "--base-url", api.base_url]
    assert main(command, connect=lambda kubeconfig: RecordedCluster()) == 0
    assert "pd_metrics" not in capsys.readouterr().out


@pytest.mark.parametrize("figure", sorted(FIGURES))
def test_each_query_parses_and_reads_metrics_that_exist(figure):
    expr = FIGURES[figure](APP)
    parse(expr)
    assert metrics_read(expr) <= known_metrics()


def test_verify_port_forwards_to_the_stacks_prometheus(dev):
    outputs = StackOutputs.from_json(dev.outputs)
    assert outputs.prometheus_service == ("monitoring", "kube-prometheus-stack-prometheus", 9090)
    assert "svc/kube-prometheus-stack-prometheus 9090:9090" in dev.outputs["prometheusPortForwardCommand"]
