"""What the stack costs (infra/settings/cost.py): the preview says the hour, the month and a million output tokens,
at the fewest GPU nodes and, with serveAutoscaling, at the most; a region the table lacks gets no figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.settings.cost import (
    HOURS_PER_MONTH,
    L4_PAIR_OUTPUT_TOKENS_S,
    MEASURED_PAIR_OUTPUT_TOKENS_S,
    cost_per_million_output_tokens,
    stack_cost,
)
from tests.conftest import SERVE_AUTOSCALING, info_notes
from tools.offline import StackRun, run_stack
from tools.project import PROJECT_DIR

PROD_REGION = {"aws:region": "us-east-1"}


def cost_note(run: StackRun) -> str:
    (note,) = [note for note in info_notes(run) if note.startswith("Cost")]
    return note


def test_the_preview_states_the_cost_an_hour_a_month_and_a_million_output_tokens():
    """The default 1P1D on two g6.8xlarge and one m7i.xlarge, one NAT gateway, the head's store of two nodes."""
    note = cost_note(run_stack(PROD_REGION))
    expected = stack_cost("us-east-1", ("g6.8xlarge", 2), ("m7i.xlarge", 1), 1, ("cache.t4g.micro", 2))
    assert f"${expected.hourly:.2f}/h" in note
    assert f"${expected.monthly:,.0f}/month" in note
    assert f"${cost_per_million_output_tokens(expected.hourly, 1):.2f} per million output tokens" in note


def test_with_serve_autoscaling_the_preview_states_the_most_it_may_cost():
    note = cost_note(run_stack({**PROD_REGION, **SERVE_AUTOSCALING}))
    most = stack_cost("us-east-1", ("g6.8xlarge", 4), ("m7i.xlarge", 1), 1, ("cache.t4g.micro", 2))
    assert f"up to ${most.hourly:.2f}/h" in note


def test_a_region_the_table_lacks_gets_no_price_of_another():
    note = cost_note(run_stack({"aws:region": "sa-east-1"}))
    assert note.startswith("Cost: no table price for sa-east-1")


def test_the_month_is_730_hours():
    cost = stack_cost("us-east-1", ("g6.8xlarge", 1), ("m7i.xlarge", 0), 0, ("cache.t4g.micro", 0))
    assert cost.monthly == pytest.approx((2.0144 + 0.10) * HOURS_PER_MONTH)


def test_an_instance_type_outside_the_table_is_named_not_priced():
    cost = stack_cost("us-east-1", ("p5.48xlarge", 2), ("m7i.xlarge", 1), 1, ("cache.t4g.micro", 0))
    assert cost.unpriced == ("GPU nodes (p5.48xlarge)",)


def test_the_measured_capacity_is_the_records():
    record = json.loads(Path(PROJECT_DIR, "lab/records/bench/2026-11-30/pd-c16.json").read_text())
    assert record["output_throughput"] == pytest.approx(MEASURED_PAIR_OUTPUT_TOKENS_S, abs=0.01)
    assert L4_PAIR_OUTPUT_TOKENS_S < MEASURED_PAIR_OUTPUT_TOKENS_S
