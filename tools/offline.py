"""Evaluates the whole Pulumi program offline, in-process under Pulumi's official mocks.

The test suite and `tools.render` both use it, so what a user renders is what the tests checked; how config is built
and what is captured and answered: docs/testing.md#the-offline-run."""

from __future__ import annotations

import contextlib
import json
import logging
import pickle
import runpy
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import Stack

from infra.nodes import node_groups
from infra.serving import model_source
from infra.settings.config import load_config
from infra.settings.reader import SECRET_SETTINGS
from infra.settings.rules_serving import API_KEYS_SETTING
from infra.settings.stack_config import StackConfig
from tools.offline_aws import DEFAULT_VCPU_QUOTA, DEPLOYER_ARN, AwsMocks, OfflineNote, StoredObject
from tools.project import PROJECT, PROJECT_DIR, declared_defaults
from tools.stack_yaml import StackFileError, cli_string, read_stack_file

# What an offline run may stand in for an unset API allow-list, which `pulumi up` requires (infra.settings.config
# refuses it empty): 192.88.99.0/24, the 6to4 relay anycast prefix RFC 7526 deprecated, no host's own address.
# RFC 5737's documentation ranges are the usual placeholder, but the allow-list's own check refuses them (they reach
# no one), and the stand-in must pass that check for the program to run on.
ALLOW_LIST_PLACEHOLDER = "192.88.99.0/24"


def _qualified(key: str) -> str:
    return key if ":" in key else f"{PROJECT}:{key}"


def project_config() -> dict[str, str]:
    """Project-level config of Pulumi.yaml: `default` of typed keys, the value of namespaced ones."""
    return {_qualified(key): cli_string(default) for key, default in declared_defaults().items()}


def _is_encrypted(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def _stack_file_values(stack: str) -> dict[str, Any]:
    """`Pulumi.<stack>.yaml`'s `config:` as the CLI decodes it (tools/stack_yaml.py); raises StackFileError naming
    the file and line of what is wrong, or of a key only `hfToken` may be: encrypted."""
    path = PROJECT_DIR / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    values, lines = read_stack_file(path, PROJECT)
    for key, value in values.items():
        if _is_encrypted(value) and key.removeprefix(f"{PROJECT}:") not in SECRET_SETTINGS:
            raise StackFileError(
                f"{path.name}:{lines[key]}: {key} is encrypted (secure:) but is not a secret setting; only "
                f"{', '.join(sorted(SECRET_SETTINGS))} may be (`pulumi config set {key} <value>`)"
            )
    return values


@dataclass(frozen=True)
class StackFile:
    """`Pulumi.<stack>.yaml` as the program sees it, from one read of the file."""

    # Its values; encrypted (`secure:`) ones, which offline cannot decrypt, as a placeholder.
    config: dict[str, str]
    # Keys it holds encrypted: the program sees them as secrets, as under the CLI.
    secret_keys: set[str]


def _encrypted_placeholder(key: str, stack: str) -> str:
    """What offline shows for a value it cannot decrypt, in the setting's own shape (the keys are a JSON list)."""
    if key == f"{PROJECT}:{API_KEYS_SETTING}":
        return json.dumps([f"<encrypted:Pulumi.{stack}.yaml:offline-stand-in>"])  # a key's length, no spaces
    return f"<encrypted in Pulumi.{stack}.yaml>"


def stack_file(stack: str) -> StackFile:
    values = _stack_file_values(stack)
    return StackFile(
        config={
            key: _encrypted_placeholder(key, stack) if _is_encrypted(value) else cli_string(value)
            for key, value in values.items()
        },
        secret_keys={key for key, value in values.items() if _is_encrypted(value)},
    )


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: tuple[str, ...]
    provider: str
    custom: bool
    protect: bool = False
    # Top-level inputs that carry a Pulumi secret anywhere inside them.
    secret_inputs: frozenset[str] = frozenset()
    # The `transforms` resource option: the engine applies them to this resource and its children.
    transforms: tuple[Callable[..., Any], ...] = ()
    # Inputs that were resource references (dotted path -> the referenced URN); `inputs` holds their id/URN.
    references: Mapping[str, str] = field(default_factory=dict)
    # The provider plugin version the SDK asks the engine for (its package version), "" when none.
    plugin_version: str = ""
    # The `replaceOnChanges` and `deleteBeforeReplace` resource options.
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    # The `retain_on_delete` option: `pulumi destroy` drops it from the state and leaves it in the cloud.
    retain_on_delete: bool = False


class EngineMessage(NamedTuple):
    """What the program told the engine (pulumi.log.info / warn / error), which `pulumi preview` prints under the
    stack's Diagnostics: `severity` is "info", "warning" or "error"."""

    severity: str
    text: str


class EngineLog(logging.Handler):
    """Pulumi's mock engine hands each message to a logger (pulumi/runtime/mocks.py MockEngine.Log: logger.debug,
    .info, .warning or .error, whose level names are the severities); this keeps them, in order, for the run."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[EngineMessage] = []
        self.logger = logging.getLogger(f"{__name__}.engine")
        self.logger.handlers[:] = [self]
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(EngineMessage(record.levelname.lower(), record.getMessage()))


@dataclass
class StackRun:
    resources: list[Resource]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    # Lookups answered from the tables here (AwsMocks.offline_notes), which the live services may answer otherwise.
    offline_notes: list[OfflineNote] = field(default_factory=list)
    # The Kubernetes objects' uids the API server gave (AwsMocks.uids): what the next run's `existing` reads.
    uids: dict[str, StoredObject] = field(default_factory=dict)
    # What the program told the engine, in order: the notes and warnings `pulumi preview` prints.
    messages: list[EngineMessage] = field(default_factory=list)

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> Resource:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        assert len(matches) == 1, f"expected one {type_} named {name!r}, found {len(matches)}"
        return matches[0]


def _holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get(rpc._special_sig_key) == rpc._special_secret_sig or any(map(_holds_secret, value.values()))
    return isinstance(value, list) and any(map(_holds_secret, value))


def _replace_special(value: Any, signature: str, replace: Callable[[dict[str, Any]], Any]) -> Any:
    """The value with every dict marked by the RPC `signature` (a secret, a resource reference) replaced."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == signature:
            return replace(value)
        return {k: _replace_special(v, signature, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_special(v, signature, replace) for v in value]
    return value


def _reveal_secrets(value: Any) -> Any:
    """Inputs as the provider receives them; which ones were secret is kept in `secret_inputs`."""
    return _replace_special(value, rpc._special_secret_sig, lambda secret: _reveal_secrets(secret["value"]))


def _resource_references(value: Any, path: str = "") -> dict[str, str]:
    """Dotted path of every resource reference in a wire-form value (list items by index) -> its URN."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_resource_sig:
            return {path: value["urn"]}
        items: Iterable[tuple[str, Any]] = value.items()
    elif isinstance(value, list):
        items = ((str(index), item) for index, item in enumerate(value))
    else:
        return {}
    return {
        found: urn
        for key, item in items
        for found, urn in _resource_references(item, f"{path}.{key}" if path else key).items()
    }


def _replace_resource_references(value: Any) -> Any:
    """Resource references rebuilt by the stock monitor land on another event loop; keep their id/URN."""
    return _replace_special(value, rpc._special_resource_sig, lambda reference: reference.get("id") or reference["urn"])


class CapturingMonitor(mocks.MockMonitor):
    def __init__(self, mocks_: AwsMocks) -> None:
        super().__init__(mocks_)
        self.aws = mocks_
        self.captured: list[Resource] = []
        self.engine_log = EngineLog()

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            wire = json_format.MessageToDict(request.object)
            plain = _replace_resource_references(wire)
            request.object.Clear()
            request.object.update(plain)
            self.captured.append(
                Resource(
                    type=request.type,
                    name=request.name,
                    urn=self.make_urn(request.parent, request.type, request.name),
                    inputs=_reveal_secrets(rpc.deserialize_properties(request.object)),
                    parent=request.parent,
                    dependencies=tuple(request.dependencies),
                    provider=request.provider,
                    custom=request.custom,
                    protect=request.protect,
                    secret_inputs=frozenset(key for key, value in plain.items() if _holds_secret(value)),
                    transforms=tuple(mocks._resolve_callbacks(request.transforms)),
                    references=_resource_references(wire),
                    plugin_version=request.version,
                    replace_on_changes=tuple(request.replaceOnChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                    retain_on_delete=bool(request.retainOnDelete),
                )
            )
            self.aws.registering = (self.captured[-1].urn, tuple(request.replaceOnChanges))
        return super().RegisterResource(request)

    def Call(self, request: Any) -> Any:
        # Component methods (eks.Cluster.get_kubeconfig) are calls; the stock monitor has no Call.
        return self.Invoke(type("CallRequest", (), {"tok": request.tok, "args": request.args, "provider": ""})())


def _configure_runtime(
    overrides: Mapping[str, Any] | None,
    stack: str,
    secret_keys: tuple[str, ...],
    preview: bool,
    aws_of_region: Callable[[str], AwsMocks],
) -> CapturingMonitor:
    """Points the Pulumi runtime at fresh mocks (`aws_of_region` makes them for the stack's region) with the stack's
    config, as `pulumi up` would see it."""
    stack_values = stack_file(stack)
    config = {**project_config(), **stack_values.config}
    config.update({_qualified(k): cli_string(v) for k, v in (overrides or {}).items()})
    monitor = CapturingMonitor(aws_of_region(config["aws:region"]))
    model_source.https_get = monitor.aws.fetch_from_hub  # no network: the model preflight asks the offline Hub
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(
        monitor.mocks, project=PROJECT, stack=stack, preview=preview, logger=monitor.engine_log.logger, monitor=monitor
    )
    pulumi.runtime.set_all_config(config, [*stack_values.secret_keys, *(_qualified(k) for k in secret_keys)])
    return monitor


def load_stack_config(
    overrides: Mapping[str, Any] | None = None, *, stack: str = "dev", secret_keys: tuple[str, ...] = ()
) -> StackConfig:
    """The validated StackConfig of a stack, without running the program (raises ConfigError)."""
    _configure_runtime(overrides, stack, secret_keys, preview=False, aws_of_region=AwsMocks)
    return load_config(describe_instance_type=node_groups.describe_instance_type)


@contextlib.contextmanager
def dynamic_serializer_undone() -> Iterator[None]:
    """Pulumi's serialize_provider (pulumi/dynamic/dynamic.py) patches pickle._Pickler's _batch_setitems and save_dict
    to sort dicts and restores only pickle.Pickler, so each dynamic resource a process serializes wraps the previous
    wrapper once more: a process that runs the program hundreds of times (the test suite) reaches Python's recursion
    limit, where a `pulumi up` serializes a few. Each offline run puts both methods back."""
    batch_setitems, save_dict = pickle._Pickler._batch_setitems, pickle._Pickler.save_dict  # type: ignore[attr-defined]
    try:
        yield
    finally:
        pickle._Pickler._batch_setitems, pickle._Pickler.save_dict = batch_setitems, save_dict  # type: ignore[attr-defined]


def run_stack(
    overrides: Mapping[str, Any] | None = None,
    *,
    stack: str = "dev",
    secret_keys: tuple[str, ...] = (),
    gpu_offering_azs: list[str] | None = None,
    preview: bool = False,
    vcpu_quota: float = DEFAULT_VCPU_QUOTA,
    caller_arn: str = DEPLOYER_ARN,
    existing_clusters: tuple[str, ...] = (),
    program_file: Path = PROJECT_DIR / "__main__.py",
    existing: StackRun | None = None,
) -> StackRun:
    """Runs a Pulumi program (the project's `__main__.py`) with the given stack's config; returns what it declared.
    `vcpu_quota`, `caller_arn` and `existing_clusters` are what Service Quotas, STS and EKS answer; `existing` is the
    run whose objects the stack's state already holds (a change to a running stack), else every object is created."""
    uids = existing.uids if existing else None
    monitor = _configure_runtime(
        overrides,
        stack,
        secret_keys,
        preview,
        lambda region: AwsMocks(region, gpu_offering_azs, vcpu_quota, caller_arn, existing_clusters, uids),
    )
    run = StackRun(
        resources=monitor.captured,
        offline_notes=monitor.aws.offline_notes,
        uids=monitor.aws.uids,
        messages=monitor.engine_log.messages,
    )

    async def resolve_outputs() -> None:
        stack = pulumi.runtime.get_root_resource()
        assert isinstance(stack, Stack), "the program ran outside a Pulumi stack"
        for name, value in stack.outputs.items():
            output = pulumi.Output.from_input(value)
            run.outputs[name] = await output.future()
            if await output.is_secret():
                run.secret_outputs.add(name)

    @pulumi.runtime.test
    def program() -> pulumi.Output[None]:
        runpy.run_path(str(program_file), run_name="__main__")
        return pulumi.Output.from_input(resolve_outputs())

    try:
        with dynamic_serializer_undone():
            program()
    except Exception as error:
        # Lets a caller check what was declared before the failure (for config errors: nothing).
        error.declared_resources = list(monitor.captured)  # type: ignore[attr-defined]
        # What of the refusal came from the tables here, not from the live services.
        error.offline_notes = list(monitor.aws.offline_notes)  # type: ignore[attr-defined]
        # What the program said before it failed (its warnings among them).
        error.engine_messages = list(monitor.engine_log.messages)  # type: ignore[attr-defined]
        raise
    return run
