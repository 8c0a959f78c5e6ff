"""EC2's DescribeInstanceTypes answers for the instance types the offline runs use, in pulumi-aws's
GetInstanceTypeResult shape: the facts the stack reads are EC2's own (docs/testing.md#the-offline-run cites the
pages), the fields it does not read placeholders of the right type."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InstanceTypeFacts:
    vcpus: int
    memory_mib: int
    gpus: int
    gpu_name: str  # NVIDIA model, empty without GPUs
    gpu_memory_mib: int  # per GPU, as EC2 reports it
    efa_interfaces: int  # 0: no EFA
    network_cards: int
    network_performance: str
    architecture: str = "x86_64"  # ProcessorInfo.SupportedArchitectures (one each here)


T4, L4, A10G, L40S = ("T4", 15360), ("L4", 22888), ("A10G", 24576), ("L40S", 45776)
A100, H100 = ("A100", 40960), ("H100", 81920)
INSTANCE_TYPES = {
    # GPU types with EFA
    "g4dn.8xlarge": InstanceTypeFacts(32, 131072, 1, *T4, 1, 1, "50 Gigabit"),
    "g5.8xlarge": InstanceTypeFacts(32, 131072, 1, *A10G, 1, 1, "25 Gigabit"),
    "g6.8xlarge": InstanceTypeFacts(32, 131072, 1, *L4, 1, 1, "25 Gigabit"),
    "g6.12xlarge": InstanceTypeFacts(48, 196608, 4, *L4, 1, 1, "40 Gigabit"),
    "g6e.12xlarge": InstanceTypeFacts(48, 393216, 4, *L40S, 1, 1, "100 Gigabit"),
    "g6e.24xlarge": InstanceTypeFacts(96, 786432, 4, *L40S, 2, 2, "200 Gigabit"),
    "g6e.48xlarge": InstanceTypeFacts(192, 1572864, 8, *L40S, 4, 4, "400 Gigabit"),
    "p4d.24xlarge": InstanceTypeFacts(96, 1179648, 8, *A100, 4, 4, "4x 100 Gigabit"),
    "p5.48xlarge": InstanceTypeFacts(192, 2097152, 8, *H100, 32, 32, "3200 Gigabit"),
    # a GPU type without EFA, an EFA type without GPUs, and a type with neither
    "g6.xlarge": InstanceTypeFacts(4, 16384, 1, *L4, 0, 1, "Up to 10 Gigabit"),
    "c5n.18xlarge": InstanceTypeFacts(72, 196608, 0, "", 0, 1, 1, "100 Gigabit"),
    "m7i.large": InstanceTypeFacts(2, 8192, 0, "", 0, 0, 1, "Up to 12.5 Gigabit"),
    "m7i.xlarge": InstanceTypeFacts(4, 16384, 0, "", 0, 0, 1, "Up to 12.5 Gigabit"),
    "m7i.2xlarge": InstanceTypeFacts(8, 32768, 0, "", 0, 0, 1, "Up to 12.5 Gigabit"),
    "m6i.large": InstanceTypeFacts(2, 8192, 0, "", 0, 0, 1, "Up to 12.5 Gigabit"),
    "m6i.xlarge": InstanceTypeFacts(4, 16384, 0, "", 0, 0, 1, "Up to 12.5 Gigabit"),
    # Graviton3: arm64 only
    "m7g.xlarge": InstanceTypeFacts(4, 16384, 0, "", 0, 0, 1, "Up to 12.5 Gigabit", "arm64"),
}


# Fields of GetInstanceTypeResult the stack does not read, the same for every type here (literal data): what all
# the listed types share (Nitro) and, for EBS, storage and the other accelerators, placeholders of the right type
# rather than this type's facts.
UNREAD_FIELDS: dict[str, Any] = {
    "validCores": [],
    "defaultNetworkCardIndex": 0,
    "bandwidthWeightings": ["default"],
    "maximumIpv4AddressesPerInterface": 30,
    "maximumIpv6AddressesPerInterface": 30,
    "ipv6Supported": True,
    "enaSupport": "required",
    "encryptionInTransitSupported": True,
    "supportedCpuFeatures": [],
    "supportedPlacementStrategies": ["cluster", "partition", "spread"],
    "supportedRootDeviceTypes": ["ebs"],
    "supportedUsagesClasses": ["on-demand", "spot"],
    "supportedVirtualizationTypes": ["hvm"],
    "sustainedClockSpeed": 0.0,
    "bareMetal": False,
    "burstablePerformanceSupported": False,
    "currentGeneration": True,
    "dedicatedHostsSupported": True,
    "freeTierEligible": False,
    "hibernationSupported": False,
    "autoRecoverySupported": True,
    "hypervisor": "nitro",
    "ebsEncryptionSupport": "supported",
    "ebsNvmeSupport": "required",
    "ebsOptimizedSupport": "default",
    "ebsPerformanceBaselineBandwidth": 0,
    "ebsPerformanceBaselineIops": 0,
    "ebsPerformanceBaselineThroughput": 0.0,
    "ebsPerformanceMaximumBandwidth": 0,
    "ebsPerformanceMaximumIops": 0,
    "ebsPerformanceMaximumThroughput": 0.0,
    "nitroEnclavesSupport": "supported",
    "nitroTpmSupport": "supported",
    "nitroTpmSupportedVersions": ["2.0"],
    "phcSupport": "supported",
    "fpgas": [],
    "totalFpgaMemory": 0,
    "inferenceAccelerators": [],
    "totalInferenceMemory": 0,
    "mediaAccelerators": [],
    "totalMediaMemory": 0,
    "neuronDevices": [],
    "totalNeuronDeviceMemory": 0,
    "instanceDisks": [],
    "instanceStorageSupported": False,
    "totalInstanceStorage": 0,
}


def describe_instance_type(instance_type: str, region: str) -> dict[str, Any]:
    """GetInstanceTypeResult's fields for one known type (KeyError for any other). Graviton runs one thread a core and
    boots UEFI only, the Intel and AMD types here two threads a core (the instance type pages' vCPU and core columns:
    https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html; https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
    ami-boot.html). `gpuses` has one entry per GPU model, with its count; each network card has its interface limit
    (8 on a one-card type, 2 per card otherwise)."""
    facts = INSTANCE_TYPES[instance_type]
    arm = facts.architecture == "arm64"
    threads = 1 if arm else 2
    interfaces_per_card = 2 if facts.network_cards > 1 else 8
    gpu = {"count": facts.gpus, "manufacturer": "NVIDIA", "name": facts.gpu_name, "memorySize": facts.gpu_memory_mib}
    return {
        "id": instance_type,
        "instanceType": instance_type,
        "region": region,
        "defaultVcpus": facts.vcpus,
        "defaultCores": facts.vcpus // threads,
        "memorySize": facts.memory_mib,
        "gpuses": [gpu] if facts.gpus else [],
        "totalGpuMemory": facts.gpus * facts.gpu_memory_mib,
        "efaSupported": facts.efa_interfaces > 0,
        "efaMaximumInterfaces": facts.efa_interfaces,
        "enaSrdSupported": facts.efa_interfaces > 0,
        "maximumNetworkCards": facts.network_cards,
        "networkCards": [
            {
                "index": card,
                "maximumInterfaces": interfaces_per_card,
                "performance": facts.network_performance,
                "baselineBandwidth": 0.0,
                "peakBandwidth": 0.0,
            }
            for card in range(facts.network_cards)
        ],
        "maximumNetworkInterfaces": interfaces_per_card * facts.network_cards,
        "networkPerformance": facts.network_performance,
        "supportedArchitectures": [facts.architecture],
        "defaultThreadsPerCore": threads,
        "validThreadsPerCores": [1] if arm else [1, 2],
        "bootModes": ["uefi"] if arm else ["legacy-bios", "uefi"],
        **copy.deepcopy(UNREAD_FIELDS),  # each answer its own lists
    }
