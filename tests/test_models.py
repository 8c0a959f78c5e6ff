"""Several models behind one endpoint (the `models` setting, infra/settings/models.py): what is refused before any
resource and why, the GPU nodes the models take, and the serve config checked by Ray Serve LLM 2.58's own classes."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve.schema import ServeDeploySchema

from infra.preflight.checks import PreflightError
from infra.serving.code_package import SERVE_EXT
from infra.serving.serve_config import MODELS_CODE, MODELS_IMPORT_PATH, PD_IMPORT_PATH
from infra.settings.models import LORA_RANKS
from tests.conftest import rejection
from tests.rayservice_parts import configmap_zip, serve_config
from tools.offline import load_stack_config, run_stack
from tools.project import PROJECT_DIR

PD_MODEL = {"id": "qwen3.5-9b", "source": "Qwen/Qwen3.5-9B", "serving": "pd"}
# The offline Hub's dense model: a config.json, no weights (tools/offline_models.py HUB_CONFIGS).
SMALL = {"id": "small", "source": "Qwen/Qwen3-8B", "serving": "aggregated"}
TUNED = {
    "id": "qwen-tuned",
    "source": "Qwen/Qwen3.5-9B",
    "serving": "aggregated",
    "adapters": ["sql", "legal"],
    "maxAdaptersPerReplica": 2,
    "maxNumSeqs": 32,
}


def models(*entries: dict[str, Any]) -> dict[str, str]:
    return {"models": json.dumps(list(entries))}


def ray_source(module: str) -> Path:
    """A module of the installed Ray, by its dotted name, without importing it (Ray's LLM builders import vLLM)."""
    spec = importlib.util.find_spec(module.rsplit(".", 1)[0])
    assert spec is not None and spec.submodule_search_locations
    return Path(spec.submodule_search_locations[0], module.rsplit(".", 1)[1] + ".py")


def class_fields(path: Path, name: str) -> set[str]:
    (found,) = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef) and n.name == name]
    return {n.target.id for n in found.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


# --- the one-model case and the list ---


def test_the_one_model_keys_are_the_one_pd_model():
    cfg = load_stack_config()
    (model,) = cfg.models
    assert (model.id, model.source, model.serving) == (cfg.model_id, cfg.model_source, "pd")


def test_a_listed_pd_model_feeds_what_the_pd_pair_reads():
    cfg = load_stack_config(models({**PD_MODEL, "id": "chat"}, SMALL))
    assert (cfg.model_id, cfg.model_source) == ("chat", PD_MODEL["source"])
    assert [model.id for model in cfg.aggregated_models] == ["small"]


def test_the_pd_models_engine_settings_stay_the_keys():
    """The pair's context, like its replicas, is the keys' (maxModelLen, prefillReplicas, ...): one way to say it."""
    error = rejection(models({**PD_MODEL, "maxModelLen": 8192}, SMALL))
    assert any(
        p.startswith("models[0].maxModelLen=8192 is invalid: allowed is no value for a PD model")
        for p in error.problems
    )


def test_a_list_with_surrounding_whitespace_is_refused():
    error = rejection({"models": json.dumps([PD_MODEL]) + "\n"})
    assert any(p.startswith("models=") and "is invalid" in p for p in error.problems)


def test_a_list_beside_a_one_model_key_is_refused_naming_both():
    error = rejection({**models(PD_MODEL, SMALL), "modelId": "other"})
    assert any(p.startswith("modelId='other' is invalid with models set") for p in error.problems)


def test_a_list_without_a_pd_model_is_refused():
    error = rejection(models(SMALL))
    assert any("lists no model with serving 'pd'" in p for p in error.problems)


def test_a_second_pd_model_is_refused():
    error = rejection(models(PD_MODEL, {**SMALL, "serving": "pd"}))
    assert any(p.startswith("models[1].serving='pd' is invalid") for p in error.problems)


def test_two_models_with_one_id_are_refused():
    error = rejection(models(PD_MODEL, {**SMALL, "id": PD_MODEL["id"]}))
    assert any(p.startswith("models[1].id='qwen3.5-9b' is invalid: it repeats models[0]") for p in error.problems)


def test_an_unknown_field_is_refused_naming_it():
    error = rejection(models(PD_MODEL, {**SMALL, "replica": 2}))
    assert any(p.startswith("models[1].replica=2 is invalid") for p in error.problems)


def test_a_model_id_with_a_colon_is_refused_because_ray_reads_the_rest_as_an_adapter():
    """Ray 2.58 splits a requested id at its first ':' into base model and adapter (ray/llm/_internal/common/utils/
    lora_utils.py get_base_model_id: `model_id.split(":")[0]`)."""
    source = ray_source("ray.llm._internal.common.utils.lora_utils").read_text()
    assert 'return model_id.split(":")[0]' in source
    error = rejection(models(PD_MODEL, {**SMALL, "id": "small:v2"}))
    assert any(p.startswith("models[1].id='small:v2' is invalid") for p in error.problems)


# --- adapters ---


def test_an_adapter_named_like_a_model_is_refused():
    error = rejection(models(PD_MODEL, SMALL, {**TUNED, "adapters": ["small"]}))
    assert any(
        p.startswith("models[2].adapters=['small'] is invalid: ['small'] is also a model id") for p in error.problems
    )


@pytest.mark.parametrize("prefix", ["s3://other-bucket/adapters", "../models", "/adapters", "adapters/../models"])
def test_an_adapter_prefix_outside_the_stacks_bucket_is_refused(prefix):
    error = rejection(models(PD_MODEL, {**TUNED, "adapterPrefix": prefix}))
    assert any(p.startswith(f"models[1].adapterPrefix={prefix!r} is invalid") for p in error.problems)


def test_more_adapters_per_replica_than_the_engine_batches_are_refused():
    """vLLM 0.26's scheduler holds a step to max_loras adapters (vllm/v1/core/sched/scheduler.py) among at most
    max_num_seqs sequences."""
    error = rejection(models(PD_MODEL, {**TUNED, "maxAdaptersPerReplica": 33}))
    assert any(p.startswith("models[1].maxAdaptersPerReplica=33 is invalid") for p in error.problems)


def test_the_adapter_ranks_are_vllms():
    """vllm/config/lora.py (vendored from the 0.26.0 wheel): MaxLoRARanks, the values max_lora_rank takes."""
    tree = ast.parse((PROJECT_DIR / "vendor" / "vllm-0.26.0" / "lora.py").read_text())
    (ranks,) = [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "MaxLoRARanks"
    ]
    assert tuple(ast.literal_eval(ranks.slice)) == LORA_RANKS


def test_a_rank_vllm_does_not_take_is_refused():
    error = rejection(models(PD_MODEL, {**TUNED, "maxAdapterRank": 4}))
    assert any(p.startswith("models[1].maxAdapterRank=4 is invalid") for p in error.problems)


def test_adapters_on_a_pd_model_are_refused_because_ray_prefills_without_the_adapter():
    """Ray 2.58's PDDecodeServer calls its prefill handle with no multiplexed model id (prefill_decode/pd_server.py
    _pd_handle_request: only a session id), so the prefill replica's LLMServer finds no adapter to load."""
    path = ray_source("ray.llm._internal.serve.serving_patterns.prefill_decode.pd_server")
    (handler,) = [n for n in ast.walk(ast.parse(path.read_text())) if getattr(n, "name", "") == "_pd_handle_request"]
    assert "multiplexed_model_id" not in ast.unparse(handler)
    error = rejection(models({**PD_MODEL, "adapters": ["sql"]}, SMALL))
    assert any(
        p.startswith("models[0].adapters=['sql'] is invalid: allowed is no LoRA on a PD model") for p in error.problems
    )


def test_adapters_without_the_stacks_bucket_are_refused():
    error = rejection({**models(PD_MODEL, TUNED), "modelCache": False})
    assert any(p.startswith("models[id='qwen-tuned'].adapters=") for p in error.problems)


def test_a_models_s3_source_is_held_to_s3s_bucket_naming_rules_as_modelsource_is():
    """https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html: no upper case, no '_'."""
    error = rejection(models(PD_MODEL, {**SMALL, "source": "s3://Bad_bucket/weights"}))
    assert any(
        p.startswith("models[1].source='s3://Bad_bucket/weights' is invalid: bucket 'Bad_bucket' breaks S3's")
        for p in error.problems
    )


def test_a_models_s3_source_names_a_prefix_as_modelsource_does():
    """The workers' role may read the model's prefix only (infra/settings/model_sources.py s3_location_reason)."""
    error = rejection(models(PD_MODEL, {**SMALL, "source": "s3://model-bucket"}))
    assert any(
        p.startswith("models[1].source='s3://model-bucket' is invalid: it names no prefix") for p in error.problems
    )


def test_a_refused_pd_source_is_reported_once_under_the_entry():
    error = rejection(models({**PD_MODEL, "source": "s3://Bad_bucket/weights"}))
    about_the_source = [p for p in error.problems if "Bad_bucket" in p or p.startswith("modelSource=")]
    assert len(about_the_source) == 1 and about_the_source[0].startswith("models[0].source=")


# --- the preflight, per model ---


def test_each_models_source_is_checked_by_the_preflight():
    with pytest.raises(PreflightError) as refused:
        run_stack(models(PD_MODEL, {**SMALL, "source": "Qwen/Qwen3-8B-typo"}))
    assert any(p.startswith("models[id='small']: modelSource='Qwen/Qwen3-8B-typo'") for p in refused.value.problems)


def test_each_model_whose_weights_are_known_gets_its_engines_capacity(with_models):
    """The offline Hub has the default model's weights, not Qwen3-8B's (tools/offline_models.py HUB_TENSORS)."""
    capacity = with_models.outputs["engineCapacity"]["models"]
    assert capacity["small"] is None
    assert capacity["qwen-tuned"]["requestsOfMaxModelLen"] >= 1


def test_a_model_whose_context_does_not_fit_its_gpu_is_refused():
    with pytest.raises(PreflightError) as refused:
        run_stack(models(PD_MODEL, {**TUNED, "maxModelLen": 262144}))
    assert any(p.startswith("models[id='qwen-tuned']: maxModelLen=262144 does not fit") for p in refused.value.problems)


# --- GPU nodes ---


def test_a_model_on_its_own_nodes_adds_them():
    """dev's g6.8xlarge has one GPU: one prefill and one decode replica fill two nodes, two small replicas two more."""
    cfg = load_stack_config(models(PD_MODEL, {**SMALL, "replicas": 2}))
    assert (cfg.topology.pd_nodes, cfg.topology.gpu_nodes) == (2, 4)


def test_a_model_on_spare_gpus_is_refused_where_the_pd_layout_leaves_none():
    error = rejection(models(PD_MODEL, {**SMALL, "placement": "spare-gpus"}))
    assert any("the PD layout leaves 0 idle" in p for p in error.problems)


def test_a_model_on_spare_gpus_takes_no_node_where_the_pd_layout_leaves_one():
    """A g6.12xlarge has 4 GPUs; the pair takes 2 of one node."""
    cfg = load_stack_config({**models(PD_MODEL, {**SMALL, "placement": "spare-gpus"}), "gpuNodeType": "g6.12xlarge"})
    assert (cfg.topology.spare_gpus, cfg.topology.gpu_nodes) == (2, 1)


# --- the serve config ---


@pytest.fixture(scope="module")
def with_models():
    return run_stack(models(PD_MODEL, SMALL, TUNED))


def app(run) -> dict:
    (application,) = serve_config(run)["applications"]
    return application


def test_one_model_keeps_rays_pd_builder(dev):
    assert app(dev)["import_path"] == PD_IMPORT_PATH


def test_several_models_are_one_app_of_the_stacks_builder(with_models):
    application = app(with_models)
    assert (application["import_path"], application["route_prefix"]) == (MODELS_IMPORT_PATH, "/")


def test_the_whole_config_validates_with_rays_serve_schema(with_models):
    ServeDeploySchema.model_validate(serve_config(with_models))


def test_every_engine_validates_with_ray_serve_llms_llmconfig(with_models):
    args = app(with_models)["args"]
    configs = [*args["pd_config"].values(), *args["llm_configs"]]
    ids = [LLMConfig.model_validate(config).model_id for config in configs]
    assert ids == ["qwen3.5-9b", "qwen3.5-9b", "small", "qwen-tuned"]


def test_the_builders_args_are_the_fields_of_rays_arg_models(with_models):
    """The stack's builder hands `pd_config` to PDServingArgs and `llm_configs` to LLMServingArgs, with the ingress
    options both take (prefill_decode/builder.py, core/ingress/builder.py)."""
    args = app(with_models)["args"]
    pd_fields = class_fields(
        ray_source("ray.llm._internal.serve.serving_patterns.prefill_decode.builder"), "PDServingArgs"
    )
    serving_fields = class_fields(ray_source("ray.llm._internal.serve.core.ingress.builder"), "LLMServingArgs")
    assert set(args["pd_config"]) <= pd_fields
    assert set(args) - {"pd_config"} <= serving_fields & pd_fields | {"llm_configs"}


def test_adapters_load_from_the_models_prefix_in_the_stacks_cache_bucket(with_models):
    (tuned,) = [
        c for c in app(with_models)["args"]["llm_configs"] if c["model_loading_config"]["model_id"] == "qwen-tuned"
    ]
    lora = LLMConfig.model_validate(tuned).lora_config
    bucket = app(with_models)["args"]["pd_config"]["decode_config"]["model_loading_config"]["model_source"].split("/")[
        2
    ]
    assert lora.dynamic_lora_loading_path == f"s3://{bucket}/adapters/qwen-tuned"
    assert lora.max_num_adapters_per_replica == 2


def test_the_lora_engine_arguments_are_vllms():
    """vllm/engine/arg_utils.py (vendored): EngineArgs takes enable_lora, max_loras and max_lora_rank."""
    fields = class_fields(PROJECT_DIR / "vendor" / "vllm-0.26.0" / "arg_utils.py", "EngineArgs")
    assert {"enable_lora", "max_loras", "max_lora_rank"} <= fields


def test_the_builders_imports_are_in_the_installed_ray(with_models):
    """serve_ext/ray_llm_eks_models/builder.py runs only in the cluster (Ray's builders import vLLM): every name it
    imports from Ray is defined or imported by that module of the installed Ray 2.58."""
    tree = ast.parse((SERVE_EXT / MODELS_CODE.package / "builder.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ray.llm"):
            module = ast.parse(ray_source(node.module).read_text())
            defined = {getattr(n, "name", None) for n in module.body} | {
                alias.asname or alias.name
                for n in ast.walk(module)
                if isinstance(n, ast.ImportFrom)
                for alias in n.names
            }
            assert {alias.name for alias in node.names} <= defined, node.module


def test_the_pods_mount_the_builder_the_app_names(with_models):
    zip_name, entries = configmap_zip(with_models, f"serving-{MODELS_CODE.configmap_prefix}")
    assert any(zip_name in uri for uri in app(with_models)["runtime_env"]["py_modules"])
    assert "serve_ext/ray_llm_eks_models/builder.py" in entries


def test_ids_ray_would_give_one_deployment_name_are_refused():
    """Ray Serve LLM 2.58 names a model's deployment after its id with '/' made '--' and '.' made '_'
    (ray/llm/_internal/serve/core/server/builder.py _get_deployment_name)."""
    source = ray_source("ray.llm._internal.serve.core.server.builder").read_text()
    assert 'return llm_config.model_id.replace("/", "--").replace(".", "_")' in source
    error = rejection(models(PD_MODEL, {**SMALL, "id": "small.v2"}, {**SMALL, "id": "small_v2"}))
    assert any(
        p.startswith("models[2].id='small_v2' is invalid: Ray Serve LLM names its deployment") for p in error.problems
    )


def test_the_workers_may_read_the_adapters_prefix(with_models):
    """Ray lists the adapters' folders and downloads each (lora_utils.py get_lora_model_ids, download_lora_adapter)."""
    policy = json.loads(with_models.get("aws:iam/rolePolicy:RolePolicy", "model-cache-reader").inputs["policy"])
    get, listing = policy["Statement"]
    assert any(resource.endswith("/adapters/qwen-tuned/*") for resource in get["Resource"])
    assert "adapters/qwen-tuned/*" in listing["Condition"]["StringLike"]["s3:prefix"]
