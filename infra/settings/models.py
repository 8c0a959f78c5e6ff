"""The stack's models: the `models` setting, a JSON list of models served behind the one endpoint, read and checked
before any resource.

With `models` empty (the default) the stack serves the one model of modelId/modelSource on the prefill/decode pair; a
list names every model instead, and the one-model keys stay at their defaults. Each entry's rule and the Ray or vLLM
source behind it: docs/models.md#what-is-refused-and-why."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.settings.kinds import Integer
from infra.settings.model_sources import ALLOWED_FORMS, is_hub_repo, model_source_problem
from infra.settings.topology import Topology

MODELS_KEY = "models"
PD, AGGREGATED = "pd", "aggregated"
SERVINGS = (PD, AGGREGATED)
# Where an aggregated model's replicas run: on GPU nodes of their own in the GPU node group, or on GPUs the PD
# layout leaves idle on its nodes (infra/settings/topology.py: a bundle holds a whole GPU, so a GPU is never shared).
OWN_NODES, SPARE_GPUS = "own-nodes", "spare-gpus"
PLACEMENTS = (OWN_NODES, SPARE_GPUS)
# vLLM 0.26's LoRAConfig.max_lora_rank: Literal[1, 8, 16, 32, 64, 128, 256, 320, 512] (vllm/config/lora.py).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
DEFAULT_LORA_RANK = 16
# vLLM 0.26's LoRAConfig.max_loras default (vllm/config/lora.py), the adapters an engine holds at once unless
# maxAdaptersPerReplica says more; fixed, so that one more adapter in the list leaves the engines as they are.
DEFAULT_ADAPTERS_PER_REPLICA = 1
# vLLM 0.26's max_num_seqs below 70 GiB of GPU memory (the table's prefillMaxNumSeqs description).
VLLM_DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_MAX_MODEL_LEN = 4096
# A model id: no space, no ':' (Ray's base/adapter separator).
MODEL_ID_PATTERN = re.compile(r"[^\s:]+\Z")
MODEL_ID_ALLOWED = "a non-empty name without spaces or ':' (Ray Serve LLM reads what follows ':' as an adapter)"
# An adapter is a folder under the prefix, and its id the folder's name (lora_utils.get_lora_model_ids).
ADAPTER_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
ADAPTER_ALLOWED = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (a folder name)"
# A key prefix in the model cache bucket: S3 keys are up to 1024 bytes; no '..' segment, no leading '/'.
PREFIX_PATTERN = re.compile(r"[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*\Z")
PREFIX_ALLOWED = (
    "a key prefix inside the stack's model cache bucket such as adapters/<model id> (letters, digits and "
    "! _ . * ' ( ) - in '/'-separated parts, no '..', no s3:// URI: the workers may read the stack's bucket only)"
)
MODEL_FIELDS = (
    "id",
    "source",
    "serving",
    "replicas",
    "tensorParallelSize",
    "maxModelLen",
    "maxNumSeqs",
    "languageModelOnly",
    "placement",
    "adapters",
    "adapterPrefix",
    "maxAdaptersPerReplica",
    "maxAdapterRank",
)
# The fields a PD model takes from the per-side and layout keys instead (one way to say each thing).
PD_FROM_KEYS = {
    "maxModelLen": "maxModelLen",
    "languageModelOnly": "languageModelOnly",
    "replicas": "prefillReplicas/decodeReplicas",
    "tensorParallelSize": "tensorParallelSize",
    "maxNumSeqs": "prefillMaxNumSeqs/decodeMaxNumSeqs",
    "placement": "the PD layout (gpuNodeType, tensorParallelSize)",
}
ALLOWED_MODELS = (
    'a JSON list of objects such as [{"id": "chat", "source": "Qwen/Qwen3.5-9B", "serving": "pd"}, {"id": "small", '
    '"source": "meta-llama/Llama-3.2-1B-Instruct", "serving": "aggregated", "replicas": 1}] with the fields '
    + ", ".join(MODEL_FIELDS)
)


@dataclass(frozen=True)
class ModelSpec:
    """One model of the `models` list, as checked."""

    id: str
    source: str
    serving: str  # PD or AGGREGATED
    max_model_len: int = DEFAULT_MAX_MODEL_LEN
    language_model_only: bool = True
    # Aggregated only (a PD model takes these from the per-side keys).
    replicas: int = 1
    tensor_parallel_size: int = 1
    max_num_seqs: int | None = None  # None: vLLM's default
    placement: str = OWN_NODES
    adapters: tuple[str, ...] = ()
    adapter_prefix: str = ""
    max_adapters_per_replica: int = DEFAULT_ADAPTERS_PER_REPLICA
    max_adapter_rank: int = DEFAULT_LORA_RANK

    @property
    def gpus(self) -> int:
        """GPUs the model's replicas hold (aggregated; a PD model's are the layout's)."""
        return self.replicas * self.tensor_parallel_size


class _Entry:
    """One entry's fields, each read with its check; a problem names `models[i].<field>`, the value, what is allowed."""

    def __init__(self, index: int, entry: dict[str, Any], problems: list[str]) -> None:
        self.index, self.entry, self.problems = index, entry, problems

    def refuse(self, name: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{MODELS_KEY}[{self.index}].{name}={value!r} is invalid: allowed is {allowed}")

    def get(self, name: str, check: Callable[[Any], bool], allowed: str, default: Any) -> Any:
        if name not in self.entry:
            if default is None:
                self.refuse(name, None, allowed + " (required)")
            return default
        value = self.entry[name]
        if not check(value):
            self.refuse(name, value, allowed)
            return default
        return value

    def integer(self, name: str, minimum: int, default: int, maximum: int | None = None) -> int:
        kind = Integer(minimum, maximum=maximum)
        return int(
            self.get(name, lambda value: _is_int(value) and kind.admits(value), f"an integer {kind.bounds}", default)
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _source(entry: _Entry) -> str:
    """The entry's source, held to modelSource's rule; "" where it is refused."""
    if "source" not in entry.entry:
        entry.refuse("source", None, ALLOWED_FORMS + " (required)")
        return ""
    problem = model_source_problem(entry.entry["source"], f"{MODELS_KEY}[{entry.index}].source")
    if problem:
        entry.problems.append(problem)
        return ""
    return str(entry.entry["source"])


def _parse_models(raw: str, max_model_len_limit: int) -> tuple[tuple[ModelSpec, ...], list[str]]:
    """The list as typed, each entry checked on its own; (the specs read, the problems)."""
    problems: list[str] = []
    try:
        entries = json.loads(raw or "[]")
    except json.JSONDecodeError:
        entries = None
    if raw != raw.strip() or not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        return (), [f"{MODELS_KEY}={raw!r} is invalid: allowed is {ALLOWED_MODELS}"]
    specs = tuple(_model(_Entry(index, entry, problems), max_model_len_limit) for index, entry in enumerate(entries))
    return specs, problems + list_problems(specs)


def _model(entry: _Entry, max_model_len_limit: int) -> ModelSpec:
    for name in sorted(set(entry.entry) - set(MODEL_FIELDS)):
        entry.refuse(name, entry.entry[name], f"one of the fields {', '.join(MODEL_FIELDS)}")
    model_id = entry.get("id", lambda v: isinstance(v, str) and bool(MODEL_ID_PATTERN.match(v)), MODEL_ID_ALLOWED, None)
    serving = entry.get("serving", lambda v: v in SERVINGS, f"one of {', '.join(SERVINGS)}", None)
    common = {
        "id": model_id or f"models[{entry.index}]",
        "source": _source(entry),
        "serving": serving or AGGREGATED,
        "max_model_len": entry.integer("maxModelLen", 1, DEFAULT_MAX_MODEL_LEN, max_model_len_limit),
        "language_model_only": entry.get("languageModelOnly", lambda v: isinstance(v, bool), "true or false", True),
    }
    if serving == PD:
        return _pd_model(entry, common)
    return _aggregated_model(entry, common)


def _pd_model(entry: _Entry, common: dict[str, Any]) -> ModelSpec:
    for name, keys in PD_FROM_KEYS.items():
        if name in entry.entry:
            entry.refuse(name, entry.entry[name], f"no value for a PD model: {keys} set its sides")
    for name in ("adapters", "adapterPrefix", "maxAdaptersPerReplica", "maxAdapterRank"):
        if name in entry.entry:
            entry.refuse(
                name,
                entry.entry[name],
                "no LoRA on a PD model: Ray 2.58's PD decode server sends the prefill replica no adapter id "
                "(prefill_decode/pd_server.py PDDecodeServer._pd_handle_request), so the prompt's KV cache would be "
                'the base model\'s; serve the adapters on an "aggregated" model of the same source',
            )
    return ModelSpec(**common)


def _aggregated_model(entry: _Entry, common: dict[str, Any]) -> ModelSpec:
    max_num_seqs = entry.integer("maxNumSeqs", 0, 0) or None
    adapters = entry.get(
        "adapters",
        lambda v: isinstance(v, list) and all(isinstance(a, str) and ADAPTER_PATTERN.match(a) for a in v),
        f"a list of adapter names, each {ADAPTER_ALLOWED}",
        [],
    )
    prefix = entry.get(
        "adapterPrefix",
        lambda v: isinstance(v, str) and bool(PREFIX_PATTERN.match(v)) and ".." not in v,
        PREFIX_ALLOWED,
        "",
    )
    spec = ModelSpec(
        **common,
        replicas=entry.integer("replicas", 1, 1),
        tensor_parallel_size=entry.integer("tensorParallelSize", 1, 1),
        max_num_seqs=max_num_seqs,
        placement=entry.get("placement", lambda v: v in PLACEMENTS, f"one of {', '.join(PLACEMENTS)}", OWN_NODES),
        adapters=tuple(adapters),
        adapter_prefix=prefix or (f"adapters/{common['id']}" if adapters else ""),
        max_adapters_per_replica=entry.integer("maxAdaptersPerReplica", 1, DEFAULT_ADAPTERS_PER_REPLICA),
        max_adapter_rank=entry.get(
            "maxAdapterRank", lambda v: _is_int(v) and v in LORA_RANKS, f"one of {LORA_RANKS}", DEFAULT_LORA_RANK
        ),
    )
    entry.problems.extend(_adapter_problems(entry.index, spec))
    return spec


def _adapter_problems(index: int, spec: ModelSpec) -> list[str]:
    """Adapters repeated, or more per replica than the engine schedules at once."""
    problems = []
    repeated = sorted({a for a in spec.adapters if spec.adapters.count(a) > 1})
    if repeated:
        problems.append(
            f"{MODELS_KEY}[{index}].adapters={list(spec.adapters)!r} is invalid: {repeated} repeat; allowed is each "
            "adapter once (an adapter is a folder under adapterPrefix)"
        )
    seqs = spec.max_num_seqs or VLLM_DEFAULT_MAX_NUM_SEQS
    if spec.adapters and spec.max_adapters_per_replica > seqs:
        problems.append(
            f"{MODELS_KEY}[{index}].maxAdaptersPerReplica={spec.max_adapters_per_replica} is invalid: the engine "
            f"batches at most maxNumSeqs={seqs} sequences, so at most that many adapters at once (vLLM's max_loras, "
            f"vllm/v1/core/sched/scheduler.py); allowed is 1 to {seqs}"
        )
    return problems


def deployment_name(model_id: str) -> str:
    """The name Ray Serve LLM 2.58 gives a model's deployment, before its class prefix (core/server/builder.py)."""
    return model_id.replace("/", "--").replace(".", "_")


def list_problems(specs: tuple[ModelSpec, ...]) -> list[str]:
    """Rules across the list: ids unique among models and adapters, one PD model at most."""
    problems = []
    model_ids = [spec.id for spec in specs]
    for index, spec in enumerate(specs):
        if model_ids.index(spec.id) != index:
            problems.append(
                f"{MODELS_KEY}[{index}].id={spec.id!r} is invalid: it repeats {MODELS_KEY}[{model_ids.index(spec.id)}]"
                "; allowed is each id once (the endpoint routes by id)"
            )
        clashes = sorted(set(spec.adapters) & set(model_ids))
        if clashes:
            problems.append(
                f"{MODELS_KEY}[{index}].adapters={list(spec.adapters)!r} is invalid: {clashes} is also a model id; "
                "allowed is an adapter name that names no model (clients ask for an adapter as '<model>:<adapter>', "
                "and one named like a model reads as that model to a client that drops the prefix)"
            )
    names = [deployment_name(spec.id) for spec in specs]
    for index, name in enumerate(names):
        first = names.index(name)
        if first != index and model_ids[first] != specs[index].id:
            problems.append(
                f"{MODELS_KEY}[{index}].id={specs[index].id!r} is invalid: Ray Serve LLM names its deployment {name!r} "
                f"as it does {MODELS_KEY}[{first}]'s ('/' made '--', '.' made '_': ray/llm/_internal/serve/core/server/"
                "builder.py _get_deployment_name), and Serve takes a deployment name once; allowed is an id that "
                "differs in more than '.' and '_'"
            )
    pd_models = [index for index, spec in enumerate(specs) if spec.serving == PD]
    if len(pd_models) > 1:
        problems.append(
            f"{MODELS_KEY}[{pd_models[1]}].serving='pd' is invalid: {MODELS_KEY}[{pd_models[0]}] is the stack's PD "
            "model, and the stack runs one prefill/decode pair (its NIXL ports and policies are one pair's); allowed "
            "is 'aggregated' for every other model"
        )
    return problems


# The one-model keys a `models` entry says instead, by the entry's field: a list and one of these set is two ways.
ONE_MODEL_KEYS = {"modelId": "id", "modelSource": "source"}


def _one_way_problems(
    values: Mapping[str, Any], listed: tuple[ModelSpec, ...], defaults: Mapping[str, Any]
) -> list[str]:
    """A `models` list beside one-model keys set away from their defaults, or a list without its PD model."""
    if not listed:
        return []
    problems = [
        f"{key}={values[key]!r} is invalid with {MODELS_KEY} set: the list names every model, so the PD model's "
        f"{field} is its entry's; allowed is {key} at its default ({defaults[key]!r}) and {field} in the pd entry"
        for key, field in ONE_MODEL_KEYS.items()
        if values[key] != defaults[key]
    ]
    if not any(model.serving == PD for model in listed):
        problems.append(
            f"{MODELS_KEY} lists no model with serving 'pd': the stack is built around one prefill/decode pair (its "
            "per-side keys, NIXL ports and GPU layout), and a stack of aggregated models alone is not built yet; "
            "allowed is one entry with serving 'pd'"
        )
    return problems


def _adapter_bucket_problems(models: tuple[ModelSpec, ...], model_cache: bool, pd_source: str) -> list[str]:
    """Adapters live in the stack's model cache bucket, which the stack makes only where it mirrors the PD model: with
    modelCache on and a Hub repo as its source (infra/preflight/checks.py mirrors_model)."""
    if model_cache and is_hub_repo(pd_source):
        return []
    return [
        f"{MODELS_KEY}[id={model.id!r}].adapters={list(model.adapters)!r} is invalid with modelCache={model_cache} and "
        f"the PD model's source {pd_source!r}: adapters load from the stack's model cache bucket, made only with "
        "modelCache true and a Hugging Face PD source; allowed is no adapters, or those settings"
        for model in models
        if model.adapters
    ]


def read_models(
    values: Mapping[str, Any], defaults: Mapping[str, Any], max_model_len_limit: int
) -> tuple[tuple[ModelSpec, ...], list[str]]:
    """Every model, the PD one first, and the problems of the `models` setting. The PD model's id and source are its
    list entry's, else the one-model keys'; its context and the rest of its engine settings are the keys'
    (PD_FROM_KEYS)."""
    listed, problems = _parse_models(values[MODELS_KEY], max_model_len_limit)
    problems += _one_way_problems(values, listed, defaults)
    entry = next((model for model in listed if model.serving == PD), None)
    # A refused source ("") is already a problem: the one-model key's stands in, so it is not reported again.
    model_id, source = (
        (entry.id, entry.source or values["modelSource"]) if entry else (values["modelId"], values["modelSource"])
    )
    pd = ModelSpec(model_id, source, PD, values["maxModelLen"], values["languageModelOnly"])
    models = (pd, *(model for model in listed if model.serving != PD))
    return models, problems + _adapter_bucket_problems(models, values["modelCache"], pd.source)


def model_layout_problems(topology: Topology, models: tuple[ModelSpec, ...]) -> list[str]:
    """An aggregated model's replicas that cannot have whole GPUs of one node each, or spare GPUs that are not there."""
    problems = []
    node = topology.node
    for model in models:
        if model.serving == AGGREGATED and (
            model.tensor_parallel_size > node.gpus or node.gpus % model.tensor_parallel_size
        ):
            problems.append(
                f"{MODELS_KEY}[id={model.id!r}].tensorParallelSize={model.tensor_parallel_size} is invalid: a "
                f"replica's GPUs stay on one {node.instance_type} of {node.gpus} GPU(s) (STRICT_PACK); allowed is a "
                f"divisor of {node.gpus}"
            )
    wanted = sum(model.gpus for model in models if model.serving == AGGREGATED and model.placement == SPARE_GPUS)
    if wanted and wanted > topology.spare_gpus:
        problems.append(
            f"{MODELS_KEY}: the models with placement {SPARE_GPUS!r} need {wanted} GPU(s), and the PD layout leaves "
            f"{topology.spare_gpus} idle on its {topology.pd_nodes} node(s) at its most ({topology.peak_replicas} "
            f"replicas x {topology.gpus_per_replica} GPU(s) on {node.gpus} GPU(s) a node: a bundle holds a whole GPU, "
            f"so a model shares a node, never a GPU); allowed is placement {OWN_NODES!r}, or fewer replicas"
        )
    return problems
