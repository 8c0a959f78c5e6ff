"""tools.probe: the one OpenAI client and the one report that verify and smoke share."""

from __future__ import annotations

import io

import pytest

from tests.openai_server import MODEL, REPLY
from tools.probe import CheckResult, EmptyCompletion, Report, client, model_ids, stream_chat


def test_stream_chat_times_a_streamed_completion_and_counts_the_servers_usage(api):
    timing, reply = stream_chat(client(api.base_url, 10), MODEL, "hello", max_tokens=8)
    assert reply == "".join(REPLY)
    assert (timing.completion_tokens, timing.counted_from) == (len(REPLY), "usage")
    assert 0 < timing.ttft_s <= timing.total_s
    (request,) = api.requests
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}


def test_server_specific_sampling_parameters_reach_the_request_body(api):
    stream_chat(client(api.base_url, 10), MODEL, "hello", max_tokens=8, extra_body={"ignore_eos": True})
    assert api.requests[0]["ignore_eos"] is True


def test_a_completion_without_content_raises(api):
    api.tokens = []
    with pytest.raises(EmptyCompletion):
        stream_chat(client(api.base_url, 10), MODEL, "hello", max_tokens=8)


def test_model_ids_lists_what_the_server_serves(api):
    assert model_ids(client(api.base_url, 10)) == [MODEL]


def test_report_prints_each_check_and_fails_only_on_required_ones():
    out = io.StringIO()
    report = Report(out)
    report.record("nodes", CheckResult(True, "2 ready", ("node-a", "node-b")))
    report.record("nccl", CheckResult(False, "sockets"), required=False)
    assert report.ok
    assert out.getvalue() == "[PASS] nodes: 2 ready\n      node-a\n      node-b\n[WARN] nccl: sockets\n"
    assert report.verdict("VERDICT") == "VERDICT: PASS (all 1 required checks passed)"
    report.record("chat", CheckResult(False, "no tokens"))
    assert not report.ok and report.failed == ["chat"]
    assert report.verdict("SMOKE") == "SMOKE: FAIL (1 of 2 required checks failed: chat)"


def test_an_empty_report_is_not_a_pass():
    assert not Report(io.StringIO()).ok
