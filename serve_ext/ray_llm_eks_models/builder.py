"""One OpenAI ingress over the stack's PD pair and its aggregated models (infra/settings/models.py).

Ray Serve LLM 2.58 builds either one PD model (serving_patterns/prefill_decode/builder.py build_pd_openai_app binds its
ingress to the decode deployment alone) or engines without PD (core/ingress/builder.py build_openai_app); this builds
both from Ray's own parts, validated by Ray's own argument models, and binds them to one ingress as those builders
do: the deployments by model id, the model cards, and each model's dynamic LoRA path. Imported only inside the cluster
(Ray's builders import vLLM).
"""

from __future__ import annotations

from typing import Any

from ray import serve
from ray.llm._internal.common.dict_utils import maybe_apply_llm_deployment_config_defaults
from ray.llm._internal.serve.core.configs.openai_api_models import to_model_metadata
from ray.llm._internal.serve.core.ingress.builder import LLMServingArgs
from ray.llm._internal.serve.core.ingress.ingress import make_fastapi_ingress
from ray.llm._internal.serve.core.server.builder import build_llm_deployment
from ray.llm._internal.serve.serving_patterns.prefill_decode.builder import PDServingArgs
from ray.llm._internal.serve.serving_patterns.prefill_decode.pd_server import PDDecodeServer, PDPrefillServer
from ray.serve.deployment import Application

INGRESS_KEYS = ("ingress_cls_config", "ingress_deployment_config")


def build_models_app(args: dict[str, Any]) -> Application:
    """`args`: `pd_config` (PDServingArgs' prefill_config and decode_config), `llm_configs` (build_openai_app's) and
    the ingress options both builders take."""
    ingress = {key: args[key] for key in INGRESS_KEYS if key in args}
    pd = PDServingArgs.model_validate({**args["pd_config"], **ingress})
    aggregated = LLMServingArgs.model_validate({"llm_configs": args["llm_configs"], **ingress})
    ids = [pd.decode_config.model_id, *(config.model_id for config in aggregated.llm_configs)]
    if len(set(ids)) != len(ids):
        raise ValueError(f"model ids repeat: {ids}")
    prefill = build_llm_deployment(pd.prefill_config, name_prefix="Prefill:", deployment_cls=PDPrefillServer)
    deployments = {
        pd.decode_config.model_id: build_llm_deployment(
            pd.decode_config,
            name_prefix="Decode:",
            bind_kwargs={"prefill_server": prefill},
            deployment_cls=PDDecodeServer,
        ),
        **{config.model_id: build_llm_deployment(config) for config in aggregated.llm_configs},
    }
    configs = [pd.decode_config, *aggregated.llm_configs]
    ingress_cls = aggregated.ingress_cls_config.ingress_cls
    options = maybe_apply_llm_deployment_config_defaults(
        ingress_cls.get_deployment_options(configs), aggregated.ingress_deployment_config
    )
    return serve.deployment(make_fastapi_ingress(ingress_cls), **options).bind(
        llm_deployments=deployments,
        model_cards={config.model_id: to_model_metadata(config.model_id, config) for config in configs},
        lora_paths={
            config.model_id: config.lora_config.dynamic_lora_loading_path
            for config in configs
            if config.lora_config is not None
        },
        **aggregated.ingress_cls_config.ingress_extra_kwargs,
    )
