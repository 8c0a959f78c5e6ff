"""The cold start's model (issues 23 and 39): the first deploy and what each later event waits for
(lab/cold_start.py), which docs/model-cache.md's and the README's tables are generated from, and the figures the
product holds as plain constants, checked against it. What the node itself does is tests/test_node_start.py."""

from __future__ import annotations

import json
import math

import pytest

from infra.settings.changes import SURGE_DELETION_DELAY_S, SURGE_MINUTES_PER_GPU_NODE
from lab import cold_start
from tests.test_alert_rules import MODELLED_FIRST_DEPLOY_MINUTES, MODELLED_MIRROR_MINUTES
from tools.offline_models import HUB_TENSORS, SAFETENSORS_DTYPE_BYTES

PAGE = cold_start.REFERENCE_PAGE.read_text()


def generated(page: str, block: str) -> str:
    lines = block.splitlines()
    begin, end = page.index(lines[0]), page.index(lines[-1])
    return page[begin : end + len(lines[-1])]


def test_the_tables_are_generated_from_the_model():
    for block in (cold_start.first_deploy_markdown(), cold_start.markdown()):
        assert generated(PAGE, block) == block, "python -m lab.cold_start --write"


def test_the_readmes_table_is_generated_from_the_model():
    block = cold_start.summary_markdown()
    assert generated(cold_start.README.read_text(), block) == block, "python -m lab.cold_start --write"


def test_weights_from_s3_come_at_the_rate_measured_on_rays_download_path():
    """The only measured rate of Ray Serve LLM's S3 download: 18.83 GB in 30.2 s (docs/cold-start.md, second run);
    no in-region rate above it is assumed (issue 39)."""
    figure = cold_start.FIGURES["ray_s3_download"]
    assert figure.kind == cold_start.MEASURED and round(18.83 / 30.2, 2) == figure.value
    assert "ray_s3_download" in cold_start.s3_weights().figures


def test_every_event_counts_rays_and_vllms_own_start():
    """Serve's deploy to RUNNING (lab/records/gpu-end-to-end.md, fourth session) holds the replicas' start, vLLM's
    import, the load and the compile; a node's `ray start` comes before it (issue 39: the totals left them out)."""
    for title, steps in cold_start.EVENTS:
        figures = {name for step in steps() for name in step.after.figures}
        assert "deploy_to_running" in figures, title


def test_a_restart_saves_what_the_nodes_caches_saved_one_engine_start_when_measured():
    """The cold and cached engine starts of one run, on one host (docs/cold-start.md, second run: 188.95 and 62.43 s),
    not a cold figure from another run (issue 39: 165 s against the same run's 117.85 s init)."""
    engines = {step.name: step for step in cold_start.restarted_pod_steps()}["engines to RUNNING"]
    saved = cold_start.FIGURES["engine_start_cold"].value - cold_start.FIGURES["engine_start_cached"].value
    assert engines.before.seconds - engines.after.seconds == pytest.approx(saved)


def test_the_weights_figure_is_the_default_checkpoints_bytes():
    tensors = json.loads(HUB_TENSORS["Qwen/Qwen3.5-9B"].read_text()).values()
    size = sum(math.prod(shape) * SAFETENSORS_DTYPE_BYTES[dtype] for dtype, shape in tensors)
    assert round(size / cold_start.GB, 2) == cold_start.FIGURES["weights"].value


def test_every_figure_names_its_source_and_how_it_was_obtained():
    for figure in cold_start.FIGURES.values():
        assert figure.source and figure.kind in (cold_start.MEASURED, cold_start.CITED, cold_start.ESTIMATE)


def test_the_refresh_command_names_the_mirror_jobs_urn(dev):
    """docs/model-cache.md, Refreshing the cache."""
    job = dev.get("kubernetes:batch/v1:Job", "model-cache-mirror")
    assert job.urn.replace("urn:pulumi:dev::", "urn:pulumi:<stack>::") in PAGE


def test_the_surge_constant_is_the_models():
    """infra/settings/changes.py holds the surge as a plain constant (the product never imports the lab)."""
    assert SURGE_MINUTES_PER_GPU_NODE == cold_start.surge_minutes()
    assert SURGE_DELETION_DELAY_S == cold_start.DEFAULT_DELETION_DELAY_S


def test_the_alert_tests_first_deploy_is_the_models():
    """tests/test_alert_rules.py plays a first deploy of the modelled length, whole minutes rounded up."""
    assert MODELLED_MIRROR_MINUTES == math.ceil(cold_start.mirror_seconds() / 60)
    assert MODELLED_FIRST_DEPLOY_MINUTES == math.ceil(cold_start.first_deploy_seconds() / 60)
