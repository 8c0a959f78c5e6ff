"""The GPU smoke test's config: the production serve config plus exactly the named one-host overrides.

Nothing here starts Ray or needs a GPU: the config is built and validated, and the log checks run
on log lines written the way vLLM 0.26 and NIXL write them.
"""

from __future__ import annotations

import itertools
import json
import logging
import logging.config
import re
import sys
import time
from pathlib import Path

import pytest

from infra.serving import prefix_routing, serve_auth
from infra.serving.rollout_status import FAILED, READY, serve_verdict
from infra.serving.serve_config import KV_ROLES, build_serve_config, longest_stream_s, serve_app_args
from lab.smoke import app as smoke_app
from lab.smoke import args as smoke_args
from lab.smoke import auth as smoke_auth
from lab.smoke import bench as smoke_bench
from lab.smoke import checks as smoke_checks
from lab.smoke import deploy as smoke_deploy
from lab.smoke import document as smoke_document
from lab.smoke import host as smoke_host
from lab.smoke import logs as smoke_logs
from lab.smoke import metrics as smoke_metrics
from lab.smoke import overrides as smoke_overrides
from lab.smoke import run as smoke_run
from lab.smoke import update as smoke_update
from tests.conftest import OPERATOR_CIDRS, SHIPPED_STACK_FILE_VALUES
from tests.openai_server import MODEL
from tools import offline
from tools.offline import load_stack_config
from tools.probe import Report
from tools.project import PROJECT_DIR

NO_EFA = smoke_host.HostFacts(has_efa=False, has_flashinfer=False)
# The lent GPU machine with Debian trixie's libfabric 2.1.0 on LD_LIBRARY_PATH, and with its own 1.17.
NO_EFA_LIBFABRIC = smoke_host.HostFacts(has_efa=False, has_flashinfer=False, libfabric=(2, 1))
NO_EFA_OLD_LIBFABRIC = smoke_host.HostFacts(has_efa=False, has_flashinfer=False, libfabric=(1, 17))
EKS_LIKE = smoke_host.HostFacts(has_efa=True, has_flashinfer=True, libfabric=(2, 3))
PD_OVERRIDES = {
    "model_source",
    "gpu_memory_utilization",
    "max_model_len",
    "enforce_eager",
    "flashinfer_sampler_off",
    "nixl_backend",
    "dp_master_port",
    "nixl_debug_logging",
}
AUTH_OVERRIDES = {"code_packages", "auth_keys_file"}


@pytest.fixture(scope="module", params=["dev", "prod"])
def cfg(request):
    return load_stack_config(stack=request.param)


def grace(production: dict) -> dict:
    """The stack's graceful shutdown timeout of its engines, which the smoke keeps (infra/serving/serve_config.py
    longest_stream_s of the production's context length)."""
    max_model_len = production["applications"][0]["args"]["decode_config"]["engine_kwargs"]["max_model_len"]
    return {"graceful_shutdown_timeout_s": longest_stream_s(max_model_len)}


def smoke_engines(config):
    """The engine configs of a smoke serve config: prefill and decode, or the baseline's one."""
    args = config["applications"][0]["args"]
    return args.get("llm_configs") or [args[f"{side}_config"] for side in ("prefill", "decode")]


def engine_override_names(overrides):
    """The overrides' names but the auth files' (the app's, where the stack emits the API-key ingress)."""
    return {o.name for o in overrides} - AUTH_OVERRIDES


def options(tmp_path, **kwargs):
    """A run's options; the auth files' place is set, used where the stack emits the API-key ingress (prod)."""
    kwargs.setdefault("auth_dir", tmp_path)
    kwargs.setdefault("code_dir", tmp_path)
    return smoke_overrides.SmokeOptions(
        model_dir=tmp_path / "model", logging_config_path=tmp_path / "log.json", **kwargs
    )


def test_changed_paths():
    before = {"a": {"b": 1, "c": [1, 2]}, "l": [{"x": 1}], "gone": 1}
    after = {"a": {"b": 2, "c": [1, 2], "new": {"deep": True}}, "l": [{"x": 3}]}
    assert smoke_document.changed_paths(before, after) == {("a", "b"), ("a", "new", "deep"), ("l", 0, "x"), ("gone",)}
    assert smoke_document.changed_paths(before, before) == set()


@pytest.mark.parametrize("host", [NO_EFA, NO_EFA_OLD_LIBFABRIC, EKS_LIKE])
@pytest.mark.parametrize("kv_roles", [None, "both", "producer-consumer"])
def test_pd_config_is_production_plus_exactly_the_named_overrides(cfg, tmp_path, host, kv_roles):
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, kv_roles=kv_roles), host)
    assert production == build_serve_config(serve_app_args(cfg)), (
        "the smoke test must start from the RayService's own builder"
    )
    assert smoke_document.changed_paths(production, config) == {o.path for o in overrides}
    expected = set(PD_OVERRIDES)
    if host.has_efa:
        expected.remove("nixl_backend")
    if host.has_flashinfer:
        expected.remove("flashinfer_sampler_off")
    if kv_roles is not None and smoke_overrides.KV_ROLE_CHOICES[kv_roles] != KV_ROLES:
        expected.add("kv_role")
    assert engine_override_names(overrides) == expected
    # Every engine override is applied to both sides; only the auth files' paths to the app around them.
    for name in expected:
        assert {o.path[3] for o in overrides if o.name == name} == {"prefill_config", "decode_config"}


def test_pd_override_values(cfg, tmp_path):
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path, kv_roles="producer-consumer"), NO_EFA)
    args = config["applications"][0]["args"]
    ports = set()
    for side, role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        engine = args[f"{side}_config"]
        assert engine["model_loading_config"] == {"model_id": cfg.model_id, "model_source": str(tmp_path / "model")}
        kv = engine["engine_kwargs"]["kv_transfer_config"]
        assert kv["kv_connector_extra_config"]["backends"] == ["UCX"]
        assert kv["kv_role"] == role
        assert kv["engine_id"] == side
        env = engine["runtime_env"]["env_vars"]
        assert all(isinstance(value, str) for value in env.values()), "runtime_env env vars must be strings"
        assert env["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
        ports.add(env["VLLM_DP_MASTER_PORT"])
        assert engine["engine_kwargs"] | {"kv_transfer_config": None} == {
            "max_model_len": 512,
            "language_model_only": True,
            "max_num_seqs": 32,
            "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1,
            "gpu_memory_utilization": 0.3,
            "enforce_eager": True,
            "kv_transfer_config": None,
        }
    assert ports == {"29500", "31500"}


def test_without_efa_but_with_libfabric_the_production_backend_stages_kv_in_host_memory(cfg, tmp_path):
    """Measured on the lent machine (lab/records/gpu-end-to-end.md): with libfabric 2.1.0 and no EFA, NIXL's
    LIBFABRIC backend comes up on libfabric's tcp provider, which has no FI_HMEM, so registering CUDA
    memory fails ("Memory type 1 is not supported by libfabric backend"); vLLM 0.26's NixlConnector
    accepts kv_buffer_device "cpu" (`vllm/distributed/kv_transfer/kv_connector/v1/nixl/utils.py`).
    The tcp provider's capabilities lack FI_HMEM in libfabric v2.1.0 (ofiwg/libfabric `man/fi_tcp.7.md`,
    "Endpoint capabilities"; `prov/tcp/src/xnet_attr.c`, XNET_EP_CAPS)."""
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path), NO_EFA_LIBFABRIC)
    assert smoke_document.changed_paths(production, config) == {o.path for o in overrides}
    assert engine_override_names(overrides) == PD_OVERRIDES - {"nixl_backend"} | {
        "libfabric_provider",
        "kv_buffer_device",
    }
    for side in ("prefill", "decode"):
        engine = config["applications"][0]["args"][f"{side}_config"]
        kv = engine["engine_kwargs"]["kv_transfer_config"]
        assert kv["kv_connector_extra_config"]["backends"] == ["LIBFABRIC"]
        assert kv["kv_buffer_device"] == "cpu"
        assert engine["runtime_env"]["env_vars"]["FI_PROVIDER"] == "tcp"


def test_a_hybrid_model_without_efa_moves_its_kv_over_ucx_from_gpu_memory(cfg, tmp_path):
    """Measured on the lent machine (lab/records/gpu-end-to-end.md): with kv_buffer_device "cpu" vLLM 0.26's NIXL
    worker fails for the hybrid model in `initialize_host_xfer_buffer` ("'list' object has no attribute
    'shape'": Mamba layers cache a list of state tensors, `nixl/base_worker.py` reads `kv_cache.shape`)."""
    opts = options(tmp_path, model_has_mamba_state=True)
    production, config, overrides = smoke_app.smoke_serve_config(cfg, opts, NO_EFA_LIBFABRIC)
    assert smoke_document.changed_paths(production, config) == {o.path for o in overrides}
    (reason,) = {o.reason.split(": ", 1)[1] for o in overrides if o.name == "nixl_backend"}
    assert "hybrid model" in reason
    assert {"libfabric_provider", "kv_buffer_device"}.isdisjoint(o.name for o in overrides)
    kv = config["applications"][0]["args"]["prefill_config"]["engine_kwargs"]["kv_transfer_config"]
    assert kv["kv_connector_extra_config"]["backends"] == ["UCX"]
    assert (
        kv["kv_buffer_device"]
        == production["applications"][0]["args"]["prefill_config"]["engine_kwargs"]["kv_transfer_config"][
            "kv_buffer_device"
        ]
    )


@pytest.mark.parametrize("host", [NO_EFA, EKS_LIKE])
def test_without_flashinfer_a_hybrid_model_prefills_with_vllms_triton_kernels(cfg, tmp_path, host):
    """vLLM 0.26 `model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py` `_resolve_gdn_prefill_backend`:
    on Hopper "auto" picks FlashInfer's GDN prefill (measured: "No module named 'flashinfer'" at warm-up
    without it); `additional_config["gdn_prefill_backend"] = "triton"` picks the Triton/FLA kernels."""
    _, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, model_has_mamba_state=True), host)
    engine = config["applications"][0]["args"]["decode_config"]["engine_kwargs"]
    if host.has_flashinfer:
        assert "gdn_prefill_triton" not in {o.name for o in overrides}
        assert "additional_config" not in engine
    else:
        assert engine["additional_config"] == {"gdn_prefill_backend": "triton"}


def test_the_hybrid_model_is_recognised_from_its_config(tiny_model_dir, tmp_path):
    """vLLM 0.26's Qwen3_5ForConditionalGeneration is IsHybrid and builds a Gated DeltaNet layer for each
    "linear_attention" entry of layer_types (vllm/model_executor/models/qwen3_5.py, Qwen3_5DecoderLayer)."""
    assert smoke_host.model_has_mamba_state(tiny_model_dir)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    assert not smoke_host.model_has_mamba_state(tmp_path)


def test_libfabric_older_than_nixl_needs_falls_back_to_ucx_and_says_why(cfg, tmp_path):
    """AWS EC2 User Guide, "Elastic Fabric Adapter" (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html):
    "NIXL integrates with Libfabric 1.21.0 and later" (lab/smoke/host.py NIXL_MIN_LIBFABRIC); NIXL 1.3.1's
    plugin failed on libfabric 1.17 ("unsupported backend 'LIBFABRIC'", lab/records/gpu-end-to-end.md)."""
    _, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path), NO_EFA_OLD_LIBFABRIC)
    (reason,) = {o.reason.split(": ", 1)[1] for o in overrides if o.name == "nixl_backend"}
    assert "libfabric 1.17 (NIXL needs >= 1.21)" in reason
    kv = config["applications"][0]["args"]["decode_config"]["engine_kwargs"]["kv_transfer_config"]
    assert kv["kv_connector_extra_config"]["backends"] == ["UCX"]


def test_libfabric_version_is_read_from_the_library(monkeypatch):
    """libfabric's fi_version() returns FI_VERSION(major, minor) = major << 16 | minor
    (ofiwg/libfabric include/rdma/fabric.h)."""

    class Library:
        def __init__(self, name):
            assert name == "libfabric.so.1"
            self.fi_version = lambda: (2 << 16) | 1

    monkeypatch.setattr(smoke_host.ctypes, "CDLL", Library)
    assert smoke_host.libfabric_version() == (2, 1)

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(smoke_host.ctypes, "CDLL", missing)
    assert smoke_host.libfabric_version() is None


def test_stack_context_and_compilation_can_be_kept(cfg, tmp_path):
    opts = options(tmp_path, max_model_len=None, enforce_eager=False)
    _, config, overrides = smoke_app.smoke_serve_config(cfg, opts, NO_EFA)
    assert {"max_model_len", "enforce_eager"}.isdisjoint(o.name for o in overrides)
    decode = config["applications"][0]["args"]["decode_config"]["engine_kwargs"]
    assert decode["max_model_len"] == cfg.max_model_len
    assert "enforce_eager" not in decode


# nvidia-smi's totals: a g6's L4 and the lent H200.
L4_MIB, H200_MIB = 23034, 143771


@pytest.mark.parametrize("aggregated", [False, True])
def test_a_smaller_gpu_is_stood_in_for_by_vllms_default_share_of_its_memory(cfg, tmp_path, aggregated):
    """vLLM's default `gpu_memory_utilization` is 0.92 (vllm 0.26.0 vllm/config/cache.py, `CacheConfig`, vendored);
    the stack sets none."""
    opts = options(tmp_path, emulated_gpu=(L4_MIB, H200_MIB), aggregated=aggregated)
    _, config, _ = smoke_app.smoke_serve_config(cfg, opts, NO_EFA)
    for engine in smoke_engines(config):
        assert engine["engine_kwargs"]["gpu_memory_utilization"] == round(0.92 * L4_MIB / H200_MIB, 4) == 0.1474


def test_a_gpu_under_70_gib_gets_the_batch_limits_vllm_picks_for_it(tmp_path):
    """vllm 0.26.0 vllm/engine/arg_utils.py `get_batch_defaults`: below 70 GiB, OPENAI_API_SERVER gets
    max_num_batched_tokens 2048 and max_num_seqs 256 (8192 and 1024 on an H200); Ray Serve LLM starts its
    engines in that context (ray 2.58.0 ray/llm/_internal/serve/engines/vllm/vllm_engine.py)."""
    cfg = load_stack_config({"prefillMaxNumSeqs": 0, "decodeMaxNumSeqs": 0}, stack="dev")
    _, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, emulated_gpu=(L4_MIB, H200_MIB)), NO_EFA)
    for engine in smoke_engines(config):
        assert {k: engine["engine_kwargs"][k] for k in ("max_num_batched_tokens", "max_num_seqs")} == {
            "max_num_batched_tokens": 2048,
            "max_num_seqs": 256,
        }
    assert "small_gpu_batch_defaults" in {o.name for o in overrides}


def test_a_large_gpu_stood_in_for_keeps_vllms_own_batch_limits(cfg, tmp_path):
    _, _, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, emulated_gpu=(81559, H200_MIB)), NO_EFA)
    assert "small_gpu_batch_defaults" not in {o.name for o in overrides}


def test_batch_limits_the_stack_sets_are_kept_on_a_smaller_gpu(tmp_path):
    cfg = load_stack_config({"decodeMaxNumSeqs": 8}, stack="dev")
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path, emulated_gpu=(L4_MIB, H200_MIB)), NO_EFA)
    assert config["applications"][0]["args"]["decode_config"]["engine_kwargs"]["max_num_seqs"] == 8


def test_unset_env_leaves_out_what_the_stack_sets_and_refuses_what_it_does_not(cfg, tmp_path):
    opts = options(tmp_path, unset_env=("NOT_SET_BY_THE_STACK",))
    with pytest.raises(ValueError, match=r"no applications\[0\]\.args\.prefill_config\.runtime_env"):
        smoke_app.smoke_serve_config(cfg, opts, NO_EFA)
    document = {"env_vars": {"A": "1", "B": "2"}}
    smoke_document.Override("unset_env", ("env_vars", "A"), None, "why", remove=True).apply(document)
    assert document == {"env_vars": {"B": "2"}}


def test_bench_command_is_vllms_own_client_at_the_given_concurrency(tmp_path):
    """Flags as vLLM 0.26 `vllm/benchmarks/serve.py` and `benchmarks/datasets/datasets.py` declare them."""
    args = smoke_args.parse_args(["--model-dir", str(tmp_path), "--bench", "1,4,16,64", "--bench-dir", str(tmp_path)])
    assert args.bench == [1, 4, 16, 64]
    command = smoke_bench.bench_command("qwen3.5-9b", tmp_path, 16, args)
    assert command[1:5] == ["-m", "vllm.entrypoints.cli.main", "bench", "serve"]
    flags = {flag: value for flag, value in itertools.pairwise(command) if not value.startswith("--")}
    assert flags["--backend"] == "openai-chat" and flags["--endpoint"] == "/v1/chat/completions"
    assert flags["--max-concurrency"] == "16" and flags["--num-prompts"] == "64"
    assert flags["--dataset-name"] == "random" and flags["--result-filename"] == "pd-c16.json"


def test_a_prefix_cache_workload_runs_greedy_through_the_completions_endpoint(tmp_path):
    """vLLM 0.26's bench flags (`vllm/benchmarks/serve.py`, `benchmarks/datasets/datasets.py` for
    `prefix_repetition`); the result is named for lab.bench_plot as `<workload>_<label>-c<concurrency>`."""
    args = smoke_args.parse_args(
        [
            "--model-dir",
            str(tmp_path),
            "--bench",
            "16",
            "--bench-workload",
            "prefix,random",
            "--bench-label",
            "route_on",
        ]
    )
    assert args.bench_workload == ("prefix", "random")
    flags = dict(itertools.pairwise(smoke_bench.bench_command(MODEL, tmp_path, 16, args, "prefix")))
    assert flags["--backend"] == "openai" and flags["--endpoint"] == "/v1/completions"
    assert flags["--dataset-name"] == "prefix_repetition" and flags["--temperature"] == "0"
    assert flags["--result-filename"] == "prefix_route_on-c16.json"


def test_an_unknown_bench_workload_is_refused_naming_the_allowed_ones(tmp_path, capsys):
    with pytest.raises(SystemExit):
        smoke_args.parse_args(["--model-dir", str(tmp_path), "--bench", "4", "--bench-workload", "prefix,multiturn"])
    assert "--bench-workload multiturn: allowed are chat,prefix,random" in capsys.readouterr().err


def recorded_scrapes() -> dict[str, dict[str, float]]:
    """The samples of docs/metrics' PD run (Ray 2.58.0, vLLM 0.26.0), one scrape per recorded stage."""
    lines = (PROJECT_DIR / "docs/metrics/ray-2.58.0-vllm-0.26.0-pd-samples.txt").read_text().splitlines()
    stages = ("running", "after-requests", "after-update")
    scrapes: dict[str, dict[str, float]] = {stage: {} for stage in stages}
    for line in lines:
        row = re.match(r"(?:moved|same)\s+(\S+) (\S+) (\S+) (.+)$", line)
        if row:
            *values, sample = row.groups()
            for stage, value in zip(stages, values, strict=True):
                if value != "-":
                    scrapes[stage][sample] = float(value)
    return scrapes


def test_engine_counts_are_what_each_replicas_engine_gained_named_by_its_deployment_and_replica():
    """Ray 2.58 tags a replica's request counter with its deployment, replica and Ray worker; vLLM 0.26's Ray
    metrics carry the same worker (vllm/v1/metrics/ray_wrappers.py): the recorded run's two decode replicas."""
    scrapes = recorded_scrapes()
    counts = smoke_metrics.engine_counts(scrapes["after-requests"], scrapes["after-update"])
    assert counts["Decode:qwen3_5-9b x6994o6f"]["request_success"] == 51 - 6
    assert counts["Decode:qwen3_5-9b 7jjdft50"]["request_success"] == 13


def test_each_bench_level_writes_what_it_added_to_each_engine_beside_its_result(tmp_path, monkeypatch):
    args = smoke_args.parse_args(
        ["--model-dir", str(tmp_path), "--bench", "4", "--bench-workload", "prefix", "--bench-dir", str(tmp_path)]
    )
    monkeypatch.setattr(smoke_bench, "run_level", lambda *_: (True, "exit 0 in 1 s"))
    scrapes = recorded_scrapes()
    taken = iter([scrapes["after-requests"], scrapes["after-update"]])
    report = Report()
    smoke_bench.run_bench(report, MODEL, tmp_path, args, scrape=lambda: next(taken))
    engines = json.loads((tmp_path / "prefix_pd-c4-engines.json").read_text())
    assert engines["Decode:qwen3_5-9b x6994o6f"]["request_success"] == 45
    assert "Decode:qwen3_5-9b x6994o6f: 45 requests" in report.checks[0].result.summary


def test_a_stalled_bench_level_fails_and_the_next_levels_still_run(tmp_path, monkeypatch):
    args = smoke_args.parse_args(
        ["--model-dir", str(tmp_path), "--bench", "1,4", "--bench-dir", str(tmp_path), "--bench-timeout", "0.5"]
    )
    stalls = {1: "import time; time.sleep(30)", 4: "pass"}
    monkeypatch.setattr(smoke_bench, "bench_command", lambda _m, _d, c, _a, _w: [sys.executable, "-c", stalls[c]])
    report = Report()
    smoke_bench.run_bench(report, "qwen3.5-9b", tmp_path, args)
    assert report.failed == ["bench_c1"]
    assert "no result within 0 s" in report.checks[0].result.summary
    assert [check.name for check in report.checks] == ["bench_c1", "bench_c4"]


def test_on_an_efa_host_the_backend_stays_libfabric(cfg, tmp_path):
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path), EKS_LIKE)
    for side in ("prefill", "decode"):
        kv = config["applications"][0]["args"][f"{side}_config"]["engine_kwargs"]["kv_transfer_config"]
        assert kv["kv_connector_extra_config"]["backends"] == ["LIBFABRIC"]


def test_aggregated_baseline_serves_the_decode_engine_alone(cfg, tmp_path):
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=True), NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    app = config["applications"][0]
    assert app["import_path"] == "ray.serve.llm:build_openai_app"
    assert app["name"] == production["applications"][0]["name"]
    (engine,) = app["args"]["llm_configs"]
    decode = production["applications"][0]["args"]["decode_config"]
    assert "kv_transfer_config" not in engine["engine_kwargs"]
    assert engine["deployment_config"] == decode["deployment_config"] == {"num_replicas": 1, **grace(production)}
    assert engine["model_loading_config"]["model_id"] == decode["model_loading_config"]["model_id"]
    assert "VLLM_DP_MASTER_PORT" not in engine["runtime_env"]["env_vars"]


@pytest.mark.parametrize(
    ("settings", "aggregated", "share_gpu", "gpus"),
    [
        ({}, False, False, 2),  # 1P1D
        ({}, True, False, 1),  # the baseline's one engine
        ({"decodeReplicas": "2"}, True, False, 2),  # issue 26's like-for-like baseline
        ({"prefillReplicas": "2", "decodeReplicas": "2"}, False, False, 4),
        ({}, False, True, 1),  # both sides on halves of one GPU
    ],
)
def test_the_gpus_checked_for_are_the_ones_the_engines_take(tmp_path, settings, aggregated, share_gpu, gpus):
    """Ray Serve LLM 2.58 places one GPU per tensor x pipeline parallel rank of each replica
    (python/ray/llm/_internal/serve/engines/vllm/vllm_models.py `num_devices`, `placement_bundles`); the aggregated
    baseline takes decode's deployment_config, so `decodeReplicas` 2 is two engines on two GPUs."""
    cfg = smoke_app.serve_stack_config("dev", settings)
    opts = options(tmp_path, aggregated=aggregated, share_gpu=share_gpu)
    _, config, _ = smoke_app.smoke_serve_config(cfg, opts, NO_EFA)
    assert smoke_overrides.gpus_needed(config, opts) == gpus


@pytest.mark.parametrize("aggregated", [False, True])
def test_ray_accepts_the_smoke_config(cfg, tmp_path, aggregated):
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=aggregated), NO_EFA)
    smoke_app.validate_with_ray(config)


def test_nixl_debug_logging_config_is_valid_and_scoped():
    vllm_logger = logging.getLogger("vllm")
    saved = (vllm_logger.level, vllm_logger.handlers[:], vllm_logger.propagate)
    try:
        logging.config.dictConfig(json.loads(json.dumps(smoke_logs.NIXL_DEBUG_LOGGING)))
        assert logging.getLogger(f"{smoke_logs.NIXL_LOGGER}.base_worker").isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("vllm.v1.engine.core").isEnabledFor(logging.DEBUG)
        assert logging.getLogger("vllm.v1.engine.core").isEnabledFor(logging.INFO)
    finally:
        vllm_logger.setLevel(saved[0])
        vllm_logger.handlers[:] = saved[1]
        vllm_logger.propagate = saved[2]
        logging.getLogger(smoke_logs.NIXL_LOGGER).setLevel(logging.NOTSET)


def write_logs(tmp_path, files):
    logs = tmp_path / "session_latest" / "logs"
    logs.mkdir(parents=True)
    for name, lines in files.items():
        (logs / name).write_text("\n".join(lines) + "\n")


# Lines as vLLM 0.26's NIXL connector and nixl-cu13 1.3.1 printed them on the GPU machine: each
# engine's worker (its own log) and the same line copied into its EngineCore's log by Ray.
NIXL = "[vllm.distributed.kv_transfer.kv_connector.v1.nixl"
PREFILL_WORKER = [
    f"INFO 2026-11-29 20:27:24,832 {NIXL}.base_worker:250] Initializing NIXL worker prefill-192.0.2.2-20000",
    "2026-11-29 20:27:25 NIXL INFO    _api.py:390 Backend UCX was instantiated",
    f"DEBUG 2026-11-29 20:27:56,113 {NIXL}.base_worker:1971] "
    "Rank 0, get_finished: 1 requests done sending and 0 requests done recving (0 failed)",
]
DECODE_WORKER = [
    f"INFO 2026-11-29 20:27:24,923 {NIXL}.base_worker:250] Initializing NIXL worker decode-192.0.2.2-22000",
    "2026-11-29 20:27:25 NIXL INFO    _api.py:390 Backend UCX was instantiated",
    f"DEBUG 2026-11-29 20:27:55,813 {NIXL}.pull_worker:57] start_load_kv for request chatcmpl-7e99 from remote "
    "engine prefill-192.0.2.2-20000. Num local_block_ids: 1. Num remote_block_ids: 1. ",
    f"INFO 2026-11-29 20:27:55,816 {NIXL}.base_worker:668] NIXL compatibility check passed (hash: fc92)",
    f"DEBUG 2026-11-29 20:27:56,114 {NIXL}.base_worker:1971] "
    "Rank 0, get_finished: 0 requests done sending and 1 requests done recving (0 failed)",
]
DECODE_SCHEDULER = [
    f"DEBUG 2026-11-29 20:27:55,811 {NIXL}.pull_scheduler:116] NIXLConnector update_state_after_alloc: "
    "num_external_tokens=270, kv_transfer_params={'do_remote_prefill': True}",
]


def ray_logs(tmp_path, decode_worker=DECODE_WORKER, prefill_worker=PREFILL_WORKER):
    def copied(engine_core, worker, lines):
        return [
            f"(EngineCore pid={engine_core}) \x1b[36m(RayWorkerProc pid={worker})\x1b[0m (Worker pid={worker}) {line}"
            for line in lines
        ]

    write_logs(
        tmp_path,
        {
            "worker-a-4704.out": [f"(Worker pid=4704) {line}" for line in decode_worker],
            "worker-b-4852.out": [f"(Worker pid=4852) {line}" for line in prefill_worker],
            "worker-c-3889.out": copied(4539, 4704, decode_worker)
            + [f"(EngineCore pid=4539) {line}" for line in DECODE_SCHEDULER],
            "worker-d-3888.out": copied(4554, 4852, prefill_worker),
        },
    )


def test_log_checks_pass_on_a_transfer_and_count_each_line_once(tmp_path, capsys):
    ray_logs(tmp_path)
    report = Report()
    smoke_logs.check_nixl_logs(report, tmp_path, "UCX", wait_s=0)
    assert report.ok, report.checks
    assert [check.name for check in report.checks] == ["nixl_backend", "kv_transfer"]
    assert "{'prefill (pid 4852)': 'UCX', 'decode (pid 4704)': 'UCX'}" in report.checks[0].result.summary
    assert report.checks[1].result.summary == (
        "decode started 1 NIXL read(s) from ['prefill-192.0.2.2-20000'], finished 1 (0 failed); "
        "prompt tokens whose KV came from prefill: [270]; prefill logged 1 done-sending notification(s)"
    )
    assert "NIXL compatibility check passed" in capsys.readouterr().out


def test_log_checks_fail_with_the_wrong_backend(tmp_path):
    ray_logs(tmp_path)
    report = Report()
    smoke_logs.check_nixl_logs(report, tmp_path, "LIBFABRIC", wait_s=0)
    assert [check.result.passed for check in report.checks] == [False, True]


def test_log_checks_fail_without_a_finished_read_or_with_one_side_missing(tmp_path):
    ray_logs(tmp_path, decode_worker=DECODE_WORKER[:2], prefill_worker=PREFILL_WORKER[:1])
    report = Report()
    smoke_logs.check_nixl_logs(report, tmp_path, "UCX", wait_s=0)
    assert [check.result.passed for check in report.checks] == [False, False]


def test_dry_run_builds_prints_and_validates(tiny_model_dir, capsys):
    assert smoke_run.main(["--stack", "dev", "--model-dir", str(tiny_model_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "infra.serving.serve_config.build_serve_config" in out
    for name in ("model_source", "dp_master_port", "max_model_len", "gpu_memory_utilization", "enforce_eager"):
        assert f"override {name}: " in out
    assert '"import_path": "ray.serve.llm:build_pd_openai_app"' in out


def test_dry_run_works_on_a_fresh_clone_whose_stack_file_has_no_allow_list(tiny_model_dir, monkeypatch, capsys):
    """The GPU host runs the smoke from a clone as shipped: no `apiPublicAccessCidrs`, which only the endpoint uses."""
    monkeypatch.setattr(offline, "_stack_file_values", SHIPPED_STACK_FILE_VALUES)
    assert smoke_run.main(["--stack", "dev", "--model-dir", str(tiny_model_dir), "--dry-run"]) == 0
    assert "config valid for Ray's ServeDeploySchema" in capsys.readouterr().out


def test_a_stack_files_own_allow_list_is_used_as_it_is():
    assert smoke_app.serve_stack_config("dev").api_public_access_cidrs == tuple(OPERATOR_CIDRS)


def test_missing_model_dir_is_refused(tmp_path, capsys):
    assert smoke_run.main(["--model-dir", str(tmp_path), "--dry-run"]) == 2
    assert "lab.tiny_model" in capsys.readouterr().out


@pytest.fixture
def serve_url(api, monkeypatch):
    """Smoke talks to Serve's HTTP proxy on the host; here that is the local OpenAI server."""
    monkeypatch.setattr(smoke_deploy, "SERVE_URL", api.base_url.removesuffix("/v1"))
    return api


def test_run_requests_records_models_and_chat(serve_url, capsys):
    report = Report()
    smoke_checks.run_requests(report, MODEL, max_tokens=8, count=2)
    assert [(check.name, check.result.passed) for check in report.checks] == [("models", True), ("chat", True)]
    assert "median of 2" in report.checks[1].result.summary
    assert "first (warm-up; in PD it includes the NIXL handshake)" in capsys.readouterr().out
    assert len(serve_url.requests) == 3
    assert all(request["ignore_eos"] and request["max_tokens"] == 8 for request in serve_url.requests)


def test_run_requests_fails_when_the_model_is_not_served(serve_url):
    serve_url.models = ["another-model"]
    report = Report()
    smoke_checks.run_requests(report, MODEL, max_tokens=8, count=2)
    assert [(check.name, check.result.passed) for check in report.checks] == [("models", False), ("chat", True)]


def test_share_gpu_puts_both_engines_on_half_a_gpu_each(cfg, tmp_path):
    """Measured on one H200 (lab/records/gpu-end-to-end.md, "Updating a running app"): PD served with each side's
    `placement_group_config` {bundles: [{GPU: 0.5, CPU: 1}]} (Ray 2.58 PlacementGroupConfig takes `bundles`,
    ray/llm/_internal/common/placement.py) and VLLM_RAY_PER_WORKER_GPUS "0.5" (vLLM's Ray executor asks
    for that many GPUs per worker, vllm/v1/executor/ray_executor_v2.py `_get_actor_resource_kwargs`)."""
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, share_gpu=True), NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    assert engine_override_names(overrides) == PD_OVERRIDES | {"share_gpu_bundle", "share_gpu_worker_gpus"}
    ports = set()
    for engine in smoke_document.engine_configs(config):
        assert engine["placement_group_config"] == {"bundles": [{"GPU": 0.5, "CPU": 1}]}
        assert engine["runtime_env"]["env_vars"]["VLLM_RAY_PER_WORKER_GPUS"] == "0.5"
        assert engine["engine_kwargs"]["gpu_memory_utilization"] == 0.3
        ports.add(engine["runtime_env"]["env_vars"]["VLLM_DP_MASTER_PORT"])
    assert ports == {"29500", "31500"}
    smoke_app.validate_with_ray(config)


def test_share_gpu_puts_the_baselines_replicas_on_one_gpu_on_vllms_default_executor(tmp_path):
    """Two aggregated replicas on one GPU, half each (the update scenario with two replicas where one GPU is lent):
    Ray 2.58's PlacementGroupConfig bundles and vLLM 0.26's VLLM_RAY_PER_WORKER_GPUS, on the default RayExecutorV2
    (vllm/envs.py VLLM_USE_RAY_V2_EXECUTOR_BACKEND defaults to 1) as the stack keeps it: the run that answered 288
    of 288 through a good change on the GPU host (lab/records/gpu-end-to-end.md, "Two replicas through an update")."""
    cfg = smoke_app.serve_stack_config("dev", {"decodeReplicas": "2"})
    production, config, overrides = smoke_app.smoke_serve_config(
        cfg, options(tmp_path, aggregated=True, share_gpu=True), NO_EFA
    )
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    (engine,) = smoke_document.engine_configs(config)
    assert engine["placement_group_config"] == {"bundles": [{"GPU": 0.5, "CPU": 1}]}
    assert engine["runtime_env"]["env_vars"]["VLLM_RAY_PER_WORKER_GPUS"] == "0.5"
    assert "VLLM_USE_RAY_V2_EXECUTOR_BACKEND" not in engine["runtime_env"]["env_vars"]
    assert engine["deployment_config"] == {"num_replicas": 2, **grace(production)}
    smoke_app.validate_with_ray(config)


def test_shared_gpu_executor_classic_runs_the_replicas_on_vllms_classic_executor_again(tmp_path):
    """--shared-gpu-executor classic sets VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 (vllm/v1/executor/abstract.py picks
    RayDistributedExecutor then), the executor whose engines died on their first request with replicas sharing the
    GPU (lab/records/gpu-end-to-end.md), so that run can be repeated."""
    cfg = smoke_app.serve_stack_config("dev", {"decodeReplicas": "2"})
    opts = options(tmp_path, aggregated=True, share_gpu=True, shared_gpu_executor="classic")
    production, config, overrides = smoke_app.smoke_serve_config(cfg, opts, NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    (engine,) = smoke_document.engine_configs(config)
    assert engine["runtime_env"]["env_vars"]["VLLM_USE_RAY_V2_EXECUTOR_BACKEND"] == "0"


def test_the_baseline_keeps_the_stacks_two_ingress_replicas(tmp_path):
    """build_openai_app takes ingress_deployment_config as the PD builder does (ray 2.58 ray/llm/_internal/serve/core/
    ingress/builder.py LLMServingArgs), so the baseline's update scenario rolls the ingress the stack would."""
    cfg = smoke_app.serve_stack_config("dev", {"prefillReplicas": "2", "decodeReplicas": "2"})
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=True, share_gpu=True), NO_EFA)
    assert config["applications"][0]["args"]["ingress_deployment_config"]["num_replicas"] == 2
    smoke_app.validate_with_ray(config)


def test_share_gpu_refuses_more_than_the_baselines_replicas_share_of_memory(tiny_model_dir, capsys):
    """The baseline's engines are its replicas: two of them share vLLM's default 0.92 (vllm/config/cache.py)."""
    argv = ["--model-dir", str(tiny_model_dir), "--aggregated", "--share-gpu", "--gpu-memory-utilization", "0.47"]
    assert smoke_run.main([*argv, "--config", "decodeReplicas=2", "--dry-run"]) == 2
    refusal = "--share-gpu runs 2 engines on one GPU: --gpu-memory-utilization at most 0.46 each"
    assert refusal in capsys.readouterr().out


@pytest.mark.parametrize(
    ("settings", "most"), [([], "0.46"), (["--config", "prefillReplicas=2", "--config", "decodeReplicas=2"], "0.23")]
)
def test_share_gpu_refuses_more_than_the_engines_share_of_memory(tiny_model_dir, capsys, settings, most):
    """vLLM's default 0.92 of a GPU's memory (vllm 0.26.0 vllm/config/cache.py), split among the engines sharing it."""
    argv = ["--model-dir", str(tiny_model_dir), "--share-gpu", "--gpu-memory-utilization", "0.47", "--dry-run"]
    assert smoke_run.main([*argv, *settings]) == 2
    assert f"--gpu-memory-utilization at most {most} each" in capsys.readouterr().out


def test_share_gpu_gives_each_of_more_replicas_its_share(tmp_path):
    """Two replicas a side on one GPU: a quarter each, on vLLM 0.26's default executor as the stack keeps it."""
    cfg = smoke_app.serve_stack_config("dev", {"prefillReplicas": "2", "decodeReplicas": "2"})
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, share_gpu=True), NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    for engine in smoke_document.engine_configs(config):
        assert engine["placement_group_config"] == {"bundles": [{"GPU": 0.25, "CPU": 1}]}
        assert engine["runtime_env"]["env_vars"]["VLLM_RAY_PER_WORKER_GPUS"] == "0.25"
        assert "VLLM_USE_RAY_V2_EXECUTOR_BACKEND" not in engine["runtime_env"]["env_vars"]
        assert engine["deployment_config"] == {"num_replicas": 2, **grace(production)}
    smoke_app.validate_with_ray(config)


def test_update_steps_are_a_good_change_a_broken_one_and_the_rollback(cfg, tmp_path):
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path), NO_EFA)
    missing = smoke_update.missing_model_dir(tmp_path / "model")
    good, broken, rollback = smoke_update.update_steps(config, missing)
    assert [s.expected for s in (good, broken, rollback)] == [READY, FAILED, READY]
    assert smoke_document.changed_paths(config, good.config) == {
        ("applications", 0, "args", f"{side}_config", "engine_kwargs", "max_model_len")
        for side in ("prefill", "decode")
    }
    assert {e["engine_kwargs"]["max_model_len"] for e in smoke_document.engine_configs(good.config)} == {1024}
    assert {e["model_loading_config"]["model_source"] for e in smoke_document.engine_configs(broken.config)} == {
        str(missing)
    }
    assert smoke_document.changed_paths(good.config, broken.config) == {
        ("applications", 0, "args", f"{side}_config", "model_loading_config", "model_source")
        for side in ("prefill", "decode")
    }
    assert rollback.config == config


def traffic(*oks):
    return [smoke_update.TrafficResult(t_s=i * 0.5, ok=ok, latency_s=0.1) for i, ok in enumerate(oks)]


def test_the_longest_outage_runs_from_the_first_failure_to_the_next_success():
    assert smoke_update.longest_outage(traffic(True, False, False, True, False, True), 3.0) == (1.0, False)
    assert smoke_update.longest_outage(traffic(True, True), 1.0) == (0.0, False)
    assert smoke_update.longest_outage(traffic(True, False, False), 4.0) == (3.5, True)


def test_an_update_step_polls_the_verdict_under_traffic_until_it_is_final(serve_url, monkeypatch):
    """A rehearsal of the loop against the local OpenAI server and dashboard answers in Serve's shape."""
    app = {"name": "ray-llm", "import_path": "ray.serve.llm:build_pd_openai_app", "args": {}}
    config = {"applications": [app]}
    deployment = {"status": "HEALTHY", "target_num_replicas": 1, "replicas": [{"state": "RUNNING"}]}
    answers = iter(
        [
            {"applications": {"ray-llm": {"status": "DEPLOYING", "deployed_app_config": app, "deployments": {}}}},
            {
                "applications": {
                    "ray-llm": {"status": "RUNNING", "deployed_app_config": app, "deployments": {"d": deployment}}
                }
            },
        ]
    )
    puts = []
    monkeypatch.setattr(
        smoke_deploy, "http_request", lambda method, url, body=None, timeout=30: puts.append(body) or (200, "")
    )
    monkeypatch.setattr(smoke_deploy, "serve_details", lambda: next(answers))
    monkeypatch.setattr(smoke_update, "VERDICT_INTERVAL_S", 0.3)
    step = smoke_update.UpdateStep("good", "a change", config, READY)
    record = smoke_update.run_update_step(step, MODEL, timeout_s=30, settle_s=0.6)
    summary = record.summary()
    assert puts == [config]
    assert [(p["state"], p["app_status"]) for p in summary["verdict_timeline"]] == [
        ("waiting", "DEPLOYING"),
        ("ready", "RUNNING"),
    ]
    assert summary["verdict"] == "ready" and summary["final_app_status"] == "RUNNING"
    assert summary["requests_ok"] >= 2 and summary["requests_failed"] == 0
    assert all(request["max_tokens"] == smoke_update.TRAFFIC_MAX_TOKENS for request in serve_url.requests)


def test_metric_names_and_pd_samples_are_written_scrape_by_scrape(tmp_path):
    exposition = "\n".join(
        [
            "# HELP ray_vllm_time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE ray_vllm_time_to_first_token_seconds histogram",
            'ray_vllm_time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3.0',
            'ray_vllm_time_to_first_token_seconds_count{model_name="m"} 3.0',
            'ray_serve_num_http_requests_total{route="/{x}"} 7.0',
            "ray_node_cpu_count 16.0",
        ]
    )
    samples = smoke_metrics.parse_metric_samples(exposition)
    assert samples['ray_serve_num_http_requests_total{route="/{x}"}'] == 7.0
    before = {key: value for key, value in samples.items() if "bucket" not in key}
    path = tmp_path / "names.txt"
    smoke_metrics.write_metrics(path, {"running": before, "after-requests": samples})
    names = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert names == sorted(
        {
            "ray_vllm_time_to_first_token_seconds_bucket",
            "ray_vllm_time_to_first_token_seconds_count",
            "ray_serve_num_http_requests_total",
            "ray_node_cpu_count",
        }
    )
    rows = [line for line in (tmp_path / "names-pd-samples.txt").read_text().splitlines() if not line.startswith("#")]
    assert rows == [
        'same  7 7 ray_serve_num_http_requests_total{route="/{x}"}',
        'moved - 3 ray_vllm_time_to_first_token_seconds_bucket{le="0.1",model_name="m"}',
        'same  3 3 ray_vllm_time_to_first_token_seconds_count{model_name="m"}',
    ]


SERVE_DETAILS = Path(__file__).parent / "fixtures" / "serve_details"


def recorded(name):
    return json.loads((SERVE_DETAILS / f"{name}.json").read_text())


@pytest.mark.parametrize(
    ("stage", "submitted", "verdict"),
    [
        ("running-v1", "v1", "ready"),
        ("deploying", "good", "waiting"),
        ("deploy-failed", "broken", "failed"),
        ("running-rollback", "v1", "ready"),
        # Read between KubeRay's submit and Serve's answer, the previous config's RUNNING is not the new one's.
        ("running-v1", "good", "waiting"),
        ("running-rollback", "broken", "waiting"),
    ],
)
def test_the_rollout_verdict_on_the_dashboards_recorded_answers(stage, submitted, verdict):
    """Recorded on one H200 by `lab.smoke --update-scenario` (lab/tests/fixtures/serve_details/README.md); Ray 2.58.0
    `ray.serve.schema.ServeInstanceDetails` is the response schema of `GET /api/serve/applications/` (its
    docstring; `extra="forbid"`), so each file is in the real API's shape. The verdicts are those measured there."""
    from ray.serve.schema import ServeInstanceDetails

    details = recorded(f"serve-details-{stage}")
    ServeInstanceDetails.model_validate(details)
    assert serve_verdict(details, recorded(f"serve-config-{submitted}")["applications"]).state == verdict


def test_the_failed_verdict_names_the_deployment_and_serves_own_message():
    details = recorded("serve-details-deploy-failed")
    message = serve_verdict(details, recorded("serve-config-broken")["applications"]).message
    assert "application ray-llm is DEPLOY_FAILED" in message
    assert "deployment Prefill:qwen3_5-9b DEPLOY_FAILED, 0/1 replicas running" in message
    assert "Failed to create vLLM engine config" in message


def test_update_steps_can_be_chosen_and_unknown_ones_are_refused(tmp_path):
    assert smoke_args.parse_args(["--model-dir", str(tmp_path), "--update-steps", "good"]).update_steps == ("good",)
    with pytest.raises(SystemExit):
        smoke_args.parse_args(["--model-dir", str(tmp_path), "--update-steps", "good,worse"])


# --- --api-key-auth: the app behind the stack's API-key ingress ---------------------------------------------------

SMOKE_KEYS = ("a" * 64, "b" * 64)


@pytest.fixture(scope="module")
def auth_cfg():
    return smoke_app.serve_stack_config("dev", api_keys=SMOKE_KEYS)


def test_the_auth_files_paths_are_overridden_exactly_where_the_stack_emits_the_ingress(cfg, tmp_path):
    _, _, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path), NO_EFA)
    auth = {o.name for o in overrides} & AUTH_OVERRIDES
    assert auth == (AUTH_OVERRIDES if cfg.serve_api_key_auth else set())
    assert all(o.path[:2] == ("applications", 0) and o.path[3] != "prefill_config" for o in overrides if o.name in auth)


@pytest.mark.parametrize("aggregated", [False, True])
def test_api_key_auth_serves_the_stacks_ingress_with_its_two_pod_paths_on_this_host(auth_cfg, tmp_path, aggregated):
    """The ingress class and its arguments are what build_serve_config emits for an exposed endpoint; only the zip
    (a ConfigMap mount in the cluster) and the keys file (the mounted Secret) are pointed at this host. The baseline
    keeps them: build_openai_app takes the same `ingress_cls_config` as the PD builder (ray 2.58
    ray/llm/_internal/serve/core/ingress/builder.py, LLMServingArgs)."""
    opts = options(tmp_path, aggregated=aggregated)
    production, config, overrides = smoke_app.smoke_serve_config(auth_cfg, opts, NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    app = config["applications"][0]
    assert app["args"]["ingress_cls_config"] == {
        "ingress_cls": serve_auth.INGRESS_CLS,
        "ingress_extra_kwargs": {"api_keys_file": str(tmp_path / smoke_overrides.AUTH_KEYS_FILE)},
    }
    assert app["runtime_env"]["py_modules"] == [f"file://{tmp_path / serve_auth.CODE.zip_name()}"]
    smoke_app.validate_with_ray(config)


def test_the_smoke_config_carries_no_key(auth_cfg, tmp_path):
    _, config, _ = smoke_app.smoke_serve_config(auth_cfg, options(tmp_path), NO_EFA)
    assert not any(key in json.dumps(config) for key in SMOKE_KEYS)


def test_a_stack_that_asks_for_keys_needs_api_key_auth(auth_cfg, tmp_path):
    with pytest.raises(ValueError, match="--api-key-auth"):
        smoke_app.smoke_serve_config(auth_cfg, options(tmp_path, auth_dir=None), NO_EFA)


def test_the_code_written_is_the_zips_the_app_loads(auth_cfg, tmp_path):
    smoke_app.write_code_packages(auth_cfg, tmp_path)
    assert (tmp_path / serve_auth.CODE.zip_name()).read_bytes() == serve_auth.CODE.zip()


def test_the_auth_file_is_the_keys_readable_by_their_owner_alone(tmp_path):
    smoke_auth.write_auth_files(tmp_path, SMOKE_KEYS)
    keys_file = tmp_path / smoke_overrides.AUTH_KEYS_FILE
    assert keys_file.read_text().split() == list(SMOKE_KEYS)
    assert keys_file.stat().st_mode & 0o077 == 0


def test_the_bench_client_gets_the_key_by_environment_not_on_its_command_line(tmp_path):
    """vLLM 0.26's bench client sends `Authorization: Bearer $OPENAI_API_KEY` when it is set
    (vllm/benchmarks/lib/endpoint_request_func.py, `_get_headers`) and has no key flag of its own."""
    args = smoke_args.parse_args(["--model-dir", str(tmp_path), "--bench", "4", "--bench-requests", "200"])
    command = smoke_bench.bench_command(MODEL, tmp_path, 4, args)
    assert dict(itertools.pairwise(command))["--num-prompts"] == "200"
    assert not any(SMOKE_KEYS[0] in part for part in command)
    assert smoke_bench.bench_env(SMOKE_KEYS[0])["OPENAI_API_KEY"] == SMOKE_KEYS[0]


@pytest.fixture
def guarded(serve_url, tmp_path):
    """The local OpenAI server reading its keys from a keys file, as the auth ingress does."""
    smoke_auth.write_auth_files(tmp_path, SMOKE_KEYS)
    serve_url.keys_file = tmp_path / smoke_overrides.AUTH_KEYS_FILE
    yield serve_url
    serve_url.keys_file = None


def test_the_auth_check_passes_a_guarded_endpoint_and_times_a_rotation(guarded, tmp_path):
    report = Report()
    new_key = smoke_auth.check_auth(report, MODEL, SMOKE_KEYS, guarded.keys_file)
    assert [(check.name, check.result.passed) for check in report.checks] == [
        ("auth", True),
        ("auth_rotation", True),
        ("auth_restored", True),
    ]
    assert "without a key 401 (invalid_api_key)" in report.checks[0].result.summary
    assert new_key not in SMOKE_KEYS and guarded.keys_file.read_text().split() == list(SMOKE_KEYS)


def test_the_auth_check_fails_an_endpoint_that_answers_without_a_key(serve_url, tmp_path):
    smoke_auth.write_auth_files(tmp_path, SMOKE_KEYS)  # the file is there, the server does not read it
    report = Report()
    smoke_auth.check_auth(report, MODEL, SMOKE_KEYS, tmp_path / smoke_overrides.AUTH_KEYS_FILE)
    assert report.checks[0].name == "auth" and not report.checks[0].result.passed
    assert "without a key 200" in report.checks[0].result.summary


def test_the_log_check_finds_a_key_in_any_ray_log(tmp_path):
    logs = tmp_path / "session_latest" / "logs" / "serve"
    logs.mkdir(parents=True)
    (logs / "replica.log").write_text("INFO request ok\n")
    report = Report()
    smoke_auth.check_no_key_in_logs(report, tmp_path, SMOKE_KEYS)
    (logs / "proxy.log").write_text(f"DEBUG Authorization: Bearer {SMOKE_KEYS[1]}\n")
    smoke_auth.check_no_key_in_logs(report, tmp_path, SMOKE_KEYS)
    assert [check.result.passed for check in report.checks] == [True, False]
    assert "proxy.log" in report.checks[1].result.summary


def test_the_update_scenarios_traffic_sends_the_key_to_a_guarded_endpoint(guarded):
    traffic = smoke_update.Traffic(MODEL, time.monotonic(), interval_s=0.05, api_key=SMOKE_KEYS[0])
    with traffic:
        time.sleep(0.3)
    assert traffic.results and all(result.ok for result in traffic.results)


def test_the_update_scenarios_traffic_without_the_key_is_refused(guarded):
    traffic = smoke_update.Traffic(MODEL, time.monotonic(), interval_s=0.05)
    with traffic:
        time.sleep(0.3)
    assert traffic.results and not any(result.ok for result in traffic.results)


@pytest.mark.parametrize("requests", ["0", "-5"])
def test_bench_requests_must_be_positive(tmp_path, requests, capsys):
    with pytest.raises(SystemExit):
        smoke_args.parse_args(["--model-dir", str(tmp_path), "--bench-requests", requests])
    assert "not a positive number" in capsys.readouterr().err


# --- prefix caching and routing (issue 37): what the GPU host runs ------------------------------------------------


def test_the_baseline_caches_prefixes_as_the_prefill_side_does(tmp_path):
    """The aggregated engine prefills, so it takes the prefill side's prefix caching (infra/settings/prefix_caching.py
    AUTO_PREFILL), not the decode side's it is otherwise copied from."""
    cfg = smoke_app.serve_stack_config("dev", {"prefixCaching": "on"})
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=True), NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    (engine,) = config["applications"][0]["args"]["llm_configs"]
    assert (engine["engine_kwargs"]["enable_prefix_caching"], engine["engine_kwargs"]["mamba_cache_mode"]) == (
        True,
        "align",
    )


@pytest.mark.parametrize("aggregated", [False, True])
def test_a_routed_app_loads_the_stacks_router_from_this_host(tmp_path, aggregated):
    """Two prefill replicas routing by prefix: the router's zip comes from this host, and Ray imports the router from
    it when it validates the deployment's config (ray/serve/config.py `_serialize_request_router_cls`)."""
    cfg = smoke_app.serve_stack_config(
        "dev", {"prefixCaching": "on", "prefixAwareRouting": "true", "prefillReplicas": "2", "decodeReplicas": "2"}
    )
    smoke_app.write_code_packages(cfg, tmp_path)
    production, config, overrides = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=aggregated), NO_EFA)
    assert smoke_document.unexplained_changes(production, config, overrides) == set()
    app = config["applications"][0]
    assert app["runtime_env"]["py_modules"] == [prefix_routing.CODE.uri(str(tmp_path))]
    routed = [engine["deployment_config"].get("request_router_config") for engine in smoke_engines(config)]
    assert prefix_routing.request_router_config() in routed
    smoke_app.validate_with_ray(config)


LATENCY_OBJECTIVES = {
    "serveAutoscaling": "true",
    "prefillMaxReplicas": "2",
    "decodeMaxReplicas": "2",
    "prefillTargetOngoingRequests": "2",
    "decodeTargetOngoingRequests": "12",
    "prefillTtftObjectiveMs": "3000",
    "decodeItlObjectiveMs": "100",
}


@pytest.mark.parametrize("aggregated", [False, True])
def test_latency_objectives_reach_the_smoke_engines_and_ray_builds_their_policy(tmp_path, aggregated):
    """The aggregated baseline takes decode's deployment_config, its policy (decode's objective and curve) with it;
    the policy's code rides the app's code zips as in the cluster, and Ray's AutoscalingConfig imports it from them."""
    cfg = smoke_app.serve_stack_config("dev", LATENCY_OBJECTIVES)
    smoke_app.write_code_packages(cfg, tmp_path)
    _, config, _ = smoke_app.smoke_serve_config(cfg, options(tmp_path, aggregated=aggregated), NO_EFA)
    policies = [engine["deployment_config"]["autoscaling_config"]["policy"] for engine in smoke_engines(config)]
    assert [policy["policy_kwargs"]["metric"] for policy in policies] == (
        ["itl_s"] if aggregated else ["ttft_s", "itl_s"]
    )
    smoke_app.validate_with_ray(config)
