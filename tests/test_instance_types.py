"""The GPU type's shape comes from EC2 (aws.ec2.get_instance_type), read from pulumi-aws's own result type."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from infra.nodes.node_groups import describe_instance_type
from infra.settings.instance_types import InstanceShape, gpu_node_type_problem, instance_shape
from tests.conftest import rejection
from tools.offline import load_stack_config


@pytest.fixture(scope="module")
def mocked_ec2():
    load_stack_config(stack="dev")  # points the runtime at the offline mocks, which answer DescribeInstanceTypes


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("g6.8xlarge", InstanceShape("g6.8xlarge", 1, "L4", 22888, True, 1, 32, 131072, 1, ("x86_64",))),
        ("g6e.24xlarge", InstanceShape("g6e.24xlarge", 4, "L40S", 45776, True, 2, 96, 786432, 2, ("x86_64",))),
        ("p5.48xlarge", InstanceShape("p5.48xlarge", 8, "H100", 81920, True, 32, 192, 2097152, 32, ("x86_64",))),
        ("g6.xlarge", InstanceShape("g6.xlarge", 1, "L4", 22888, False, 0, 4, 16384, 1, ("x86_64",))),
    ],
)
def test_the_shape_is_read_from_pulumi_aws_result_type(mocked_ec2, instance_type, expected):
    """Through the real invoke and `GetInstanceTypeResult` (pulumi_aws/ec2/get_instance_type.py): `gpuses[].count`,
    `efa_maximum_interfaces`, `default_vcpus`, `memory_size` (MiB), `maximum_network_cards`; values as EC2
    lists them (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)."""
    assert describe_instance_type(instance_type) == expected


def test_a_type_ec2_does_not_know_is_none(mocked_ec2):
    assert describe_instance_type("g9z.8xlarge") is None


def gpus(*models: tuple[str, str, int]) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(manufacturer=maker, name=name, count=count, memory_size=8192) for maker, name, count in models
    ]


def ec2_answer(gpuses: list[SimpleNamespace], efa: int) -> SimpleNamespace:
    return SimpleNamespace(
        instance_type="x.large",
        gpuses=gpuses,
        efa_supported=efa > 0,
        efa_maximum_interfaces=efa,
        default_vcpus=8,
        memory_size=32768,
        maximum_network_cards=1,
        supported_architectures=["x86_64"],
    )


def test_only_nvidia_gpus_count():
    """The NVIDIA device plugin advertises NVIDIA GPUs only (its chart runs on nodes with NVIDIA's PCI vendor
    ID 10de: vendor/nvidia-device-plugin-0.20.0/values.yaml, affinity); an AMD type (g4ad) has none for this stack."""
    shape = instance_shape(ec2_answer(gpus(("AMD", "Radeon Pro V520", 1)), efa=1))
    assert shape.gpus == 0
    assert "supports EFA but has no NVIDIA GPU" in gpu_node_type_problem("g4ad.8xlarge", shape, "sa-east-1")


def test_an_efa_count_without_efa_support_is_no_efa():
    assert instance_shape(ec2_answer(gpus(("NVIDIA", "L4", 1)), efa=0)).efa_interfaces == 0


def test_attributes_ec2_does_not_report_read_as_none():
    """https://www.pulumi.com/registry/packages/aws/api-docs/ec2/getinstancetype/ (from the Terraform data source
    aws_ec2_instance_type): "Not all attributes are set for every instance type"."""
    answer = ec2_answer([], efa=0)
    answer.gpuses, answer.efa_supported, answer.efa_maximum_interfaces = None, None, None
    shape = instance_shape(answer)
    assert (shape.gpus, shape.efa_supported, shape.efa_interfaces) == (0, False, 0)


def test_a_type_with_gpus_and_efa_is_fit():
    shape = instance_shape(ec2_answer(gpus(("NVIDIA", "L4", 4)), efa=1))
    assert gpu_node_type_problem("x.large", shape, "sa-east-1") is None


def test_an_unfit_gpu_type_stops_the_program_before_any_resource():
    assert "gpuNodeType='c5n.18xlarge' is invalid" in str(rejection({"gpuNodeType": "c5n.18xlarge"}))
