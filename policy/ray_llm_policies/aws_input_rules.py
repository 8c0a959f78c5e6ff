"""Which input rule AWS enforces on each AWS property this program sets (RULES, the rules in aws_rules.py), which
properties no rule covers and why (EXPLAINED), and the walk that checks a resource's inputs against them.

Used by tests/test_aws_input_rules.py and the `aws-input-rules` policy
(docs/aws-input-rules.md#what-holds-the-class). Dependency-free (the standard library only), so the policy pack and
the tests share it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from . import aws_rules as aws

# --- properties the table explains instead of checking ----------------------------------------------------------------
REFERENCE = "the id, name or ARN of a resource the stack declares or looked up, as AWS returns it"
BOOLEAN = "a boolean: the provider schema's type is the whole rule"
CONFIG = "a stack-config value, refused before any resource by its key's rule (infra/settings/table.py)"
CONSTANT = "a fixed value of the program's code (no name, description or user text)"
NO_RULE = "no rule found in the API reference or the provider's validators"

TAGS = {"tags{key}": aws.TAG_KEY, "tags{value}": aws.TAG_VALUE}
_CLUSTER_ADDON = {
    "resolveConflictsOnCreate": aws.RESOLVE_CONFLICTS_ON_CREATE,
    "resolveConflictsOnUpdate": aws.RESOLVE_CONFLICTS_ON_UPDATE,
}

NODE_GROUP: Mapping[str, aws.Rule] = {
    **TAGS,
    "nodeGroupName": aws.NODEGROUP_NAME,
    "amiType": aws.AMI_TYPE,
    "capacityType": aws.CAPACITY_TYPE,
    "taints[].key": aws.TAINT_KEY,
    "taints[].value": aws.TAINT_VALUE,
    "taints[].effect": aws.TAINT_EFFECT,
    "labels{key}": aws.NODE_LABEL,
    "labels{value}": aws.NODE_LABEL,
    "launchTemplate.version": aws.LAUNCH_TEMPLATE_VERSION,
    "scalingConfig.desiredSize": aws.NODE_COUNT,
    "scalingConfig.minSize": aws.NODE_COUNT,
    "scalingConfig.maxSize": aws.NODE_COUNT_MAX,
}

# Type token -> property path -> Rule. A path names a nested property with `.`, a list's items with `[]`, a map's
# keys and values with `{key}` and `{value}` (and `{}.` before a property of a map's values).
RULES: Mapping[str, Mapping[str, aws.Rule]] = {
    "aws:ec2/vpc:Vpc": {**TAGS, "cidrBlock": aws.CIDR_BLOCK},
    "aws:ec2/subnet:Subnet": {**TAGS, "cidrBlock": aws.CIDR_BLOCK},
    "aws:ec2/eip:Eip": {**TAGS, "domain": aws.ADDRESS_DOMAIN},
    "aws:ec2/internetGateway:InternetGateway": TAGS,
    "aws:ec2/natGateway:NatGateway": TAGS,
    "aws:ec2/routeTable:RouteTable": TAGS,
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {},
    "aws:ec2/vpcEndpoint:VpcEndpoint": {**TAGS, "vpcEndpointType": aws.VPC_ENDPOINT_TYPE},
    "aws:ec2/securityGroup:SecurityGroup": {
        **TAGS,
        "name": aws.SECURITY_GROUP_NAME,
        "description": aws.SECURITY_GROUP_DESCRIPTION,
        "ingress[].description": aws.SECURITY_GROUP_RULE_DESCRIPTION,
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        **TAGS,
        "name": aws.LAUNCH_TEMPLATE_NAME,
        "description": aws.LAUNCH_TEMPLATE_DESCRIPTION,
        "userData": aws.USER_DATA,
        "blockDeviceMappings[].ebs.volumeType": aws.VOLUME_TYPE,
        "blockDeviceMappings[].ebs.volumeSize": aws.GP3_SIZE,
        "metadataOptions.httpEndpoint": aws.HTTP_ENDPOINT,
        "metadataOptions.httpTokens": aws.HTTP_TOKENS,
        "metadataOptions.httpPutResponseHopLimit": aws.HOP_LIMIT,
        "networkInterfaces[].interfaceType": aws.INTERFACE_TYPE,
        "instanceMarketOptions.marketType": aws.MARKET_TYPE,
        "tagSpecifications[].resourceType": aws.TAGGED_RESOURCE_TYPE,
        "tagSpecifications[].tags{key}": aws.TAG_KEY,
        "tagSpecifications[].tags{value}": aws.TAG_VALUE,
    },
    "aws:ec2/placementGroup:PlacementGroup": {
        **TAGS,
        "name": aws.PLACEMENT_GROUP_NAME,
        "strategy": aws.PLACEMENT_STRATEGY,
    },
    "aws:iam/role:Role": {
        **TAGS,
        "name": aws.IAM_ROLE_NAME,
        "description": aws.IAM_ROLE_DESCRIPTION,
        "assumeRolePolicy": aws.TRUST_POLICY,
    },
    "aws:iam/rolePolicy:RolePolicy": {"name": aws.IAM_ROLE_POLICY_NAME, "policy": aws.INLINE_POLICY},
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"policyArn": aws.MANAGED_POLICY_ARN},
    "aws:kms/key:Key": {**TAGS, "description": aws.KMS_DESCRIPTION, "deletionWindowInDays": aws.KMS_DELETION_WINDOW},
    "aws:eks/addon:Addon": {
        **TAGS,
        **_CLUSTER_ADDON,
        "addonName": aws.ADDON_NAME,
        "addonVersion": aws.ADDON_VERSION,
        "clusterName": aws.EKS_CLUSTER_NAME,
    },
    "aws:elasticache/subnetGroup:SubnetGroup": {**TAGS, "name": aws.CACHE_SUBNET_GROUP_NAME},
    "aws:elasticache/replicationGroup:ReplicationGroup": {
        **TAGS,
        "replicationGroupId": aws.REPLICATION_GROUP_ID,
        "description": aws.REPLICATION_GROUP_DESCRIPTION,
        "authToken": aws.AUTH_TOKEN,
        "engine": aws.ENGINE,
        "numCacheClusters": aws.CACHE_CLUSTERS,
        "snapshotRetentionLimit": aws.SNAPSHOT_RETENTION,
        "maintenanceWindow": aws.MAINTENANCE_WINDOW,
    },
    "aws:s3/bucket:Bucket": {**TAGS, "bucket": aws.BUCKET_NAME},
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {},
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {
        "rules[].applyServerSideEncryptionByDefault.sseAlgorithm": aws.SSE_ALGORITHM
    },
    # pulumi-eks's components: the inputs the program passes, which become the aws:eks cluster and node group.
    "eks:index:Cluster": {
        **TAGS,
        "name": aws.EKS_CLUSTER_NAME,
        "authenticationMode": aws.AUTHENTICATION_MODE,
        "enabledClusterLogTypes[]": aws.LOG_TYPE,
        "accessEntries{}.accessPolicies{}.policyArn": aws.ACCESS_POLICY_ARN,
        "accessEntries{}.accessPolicies{}.accessScope.type": aws.ACCESS_SCOPE_TYPE,
        "kubeProxyAddonOptions.version": aws.ADDON_VERSION,
        "vpcCniOptions.addonVersion": aws.ADDON_VERSION,
        **{
            f"{addon}.{key}": rule
            for addon in ("kubeProxyAddonOptions", "vpcCniOptions", "corednsAddonOptions")
            for key, rule in _CLUSTER_ADDON.items()
        },
    },
    "eks:index:ManagedNodeGroup": NODE_GROUP,
    # pulumi-eks's children (tests/test_aws_input_rules.py expands the components with pulumi-eks's own code).
    "aws:eks/cluster:Cluster": {
        **TAGS,
        "name": aws.EKS_CLUSTER_NAME,
        "accessConfig.authenticationMode": aws.AUTHENTICATION_MODE,
        "enabledClusterLogTypes[]": aws.LOG_TYPE,
        "encryptionConfig.resources[]": aws.ENCRYPTED_RESOURCES,
    },
    "aws:eks/nodeGroup:NodeGroup": {**NODE_GROUP, "clusterName": aws.EKS_CLUSTER_NAME},
    "aws:eks/accessEntry:AccessEntry": {"clusterName": aws.EKS_CLUSTER_NAME},
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {
        "clusterName": aws.EKS_CLUSTER_NAME,
        "policyArn": aws.ACCESS_POLICY_ARN,
        "accessScope.type": aws.ACCESS_SCOPE_TYPE,
    },
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": {},
}

_NODE_GROUP_EXPLAINED = {
    "launchTemplate.id": REFERENCE,
    "subnetIds[]": REFERENCE,
    "instanceTypes[]": CONFIG,
    "version": CONFIG,
}
# Type token -> property path -> why the table checks no rule there (a path explains everything below it too).
EXPLAINED: Mapping[str, Mapping[str, str]] = {
    "aws:ec2/vpc:Vpc": {"enableDnsHostnames": BOOLEAN, "enableDnsSupport": BOOLEAN},
    "aws:ec2/subnet:Subnet": {"vpcId": REFERENCE, "availabilityZone": REFERENCE, "mapPublicIpOnLaunch": BOOLEAN},
    "aws:ec2/eip:Eip": {},
    "aws:ec2/internetGateway:InternetGateway": {"vpcId": REFERENCE},
    "aws:ec2/natGateway:NatGateway": {"allocationId": REFERENCE, "subnetId": REFERENCE},
    "aws:ec2/routeTable:RouteTable": {
        "vpcId": REFERENCE,
        "routes[].cidrBlock": CONSTANT,
        "routes[].gatewayId": REFERENCE,
        "routes[].natGatewayId": REFERENCE,
    },
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {"routeTableId": REFERENCE, "subnetId": REFERENCE},
    "aws:ec2/vpcEndpoint:VpcEndpoint": {"vpcId": REFERENCE, "routeTableIds[]": REFERENCE, "serviceName": CONSTANT},
    "aws:ec2/securityGroup:SecurityGroup": {
        "vpcId": REFERENCE,
        **{
            f"{direction}[].{key}": reason
            for direction in ("ingress", "egress")
            for key, reason in (
                ("protocol", CONSTANT),
                ("fromPort", CONSTANT),
                ("toPort", CONSTANT),
                ("self", BOOLEAN),
            )
        },
        "ingress[].securityGroups[]": REFERENCE,
    },
    "aws:ec2/launchTemplate:LaunchTemplate": {
        "blockDeviceMappings[].deviceName": CONSTANT,
        "blockDeviceMappings[].ebs.deleteOnTermination": BOOLEAN,
        "blockDeviceMappings[].ebs.encrypted": BOOLEAN,
        "blockDeviceMappings[].ebs.iops": CONSTANT,
        "blockDeviceMappings[].ebs.throughput": CONSTANT,
        "capacityReservationSpecification.capacityReservationTarget.capacityReservationId": CONFIG,
        "instanceType": CONFIG,
        "networkInterfaces[].associatePublicIpAddress": BOOLEAN,
        "networkInterfaces[].deleteOnTermination": BOOLEAN,
        "networkInterfaces[].deviceIndex": CONSTANT,
        "networkInterfaces[].networkCardIndex": CONSTANT,
        "networkInterfaces[].securityGroups[]": REFERENCE,
        "placement.groupName": REFERENCE,
        "vpcSecurityGroupIds[]": REFERENCE,
    },
    "aws:ec2/placementGroup:PlacementGroup": {},
    "aws:iam/role:Role": {},
    "aws:iam/rolePolicy:RolePolicy": {"role": REFERENCE},
    # pulumi-eks passes the role resource itself: everything below `role` is that reference.
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {"role": REFERENCE},
    "aws:kms/key:Key": {"enableKeyRotation": BOOLEAN},
    "aws:eks/addon:Addon": {"configurationValues": CONSTANT, "preserve": BOOLEAN},
    "aws:elasticache/subnetGroup:SubnetGroup": {"description": NO_RULE, "subnetIds[]": REFERENCE},
    "aws:elasticache/replicationGroup:ReplicationGroup": {
        "applyImmediately": BOOLEAN,
        "atRestEncryptionEnabled": BOOLEAN,
        "automaticFailoverEnabled": BOOLEAN,
        "multiAzEnabled": BOOLEAN,
        "transitEncryptionEnabled": BOOLEAN,
        "engineVersion": CONSTANT,
        "port": CONSTANT,
        "nodeType": CONFIG,
        "securityGroupIds[]": REFERENCE,
    },
    "aws:s3/bucket:Bucket": {"forceDestroy": BOOLEAN},
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": {
        "bucket": REFERENCE,
        "blockPublicAcls": BOOLEAN,
        "blockPublicPolicy": BOOLEAN,
        "ignorePublicAcls": BOOLEAN,
        "restrictPublicBuckets": BOOLEAN,
    },
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": {"bucket": REFERENCE},
    "eks:index:Cluster": {
        "accessEntries{key}": CONSTANT,
        "accessEntries{}.accessPolicies{key}": CONSTANT,
        "accessEntries{}.principalArn": CONFIG,
        "publicAccessCidrs[]": CONFIG,
        "version": CONFIG,
        "encryptionConfigKeyArn": REFERENCE,
        "vpcId": REFERENCE,
        "privateSubnetIds[]": REFERENCE,
        "publicSubnetIds[]": REFERENCE,
        "corednsAddonOptions.enabled": BOOLEAN,
        "kubeProxyAddonOptions.enabled": BOOLEAN,
        "vpcCniOptions.enableNetworkPolicy": BOOLEAN,
        "createOidcProvider": BOOLEAN,
        "deletionProtection": BOOLEAN,
        "endpointPrivateAccess": BOOLEAN,
        "endpointPublicAccess": BOOLEAN,
        "nodeAssociatePublicIpAddress": BOOLEAN,
        "skipDefaultNodeGroup": BOOLEAN,
        "skipDefaultSecurityGroups": BOOLEAN,
    },
    "eks:index:ManagedNodeGroup": {
        "cluster": REFERENCE,
        "nodeRole": REFERENCE,
        "ignoreScalingChanges": BOOLEAN,
        **_NODE_GROUP_EXPLAINED,
    },
    "aws:eks/cluster:Cluster": {
        "roleArn": REFERENCE,
        "encryptionConfig.provider.keyArn": REFERENCE,
        "vpcConfig.subnetIds[]": REFERENCE,
        "vpcConfig.publicAccessCidrs[]": CONFIG,
        "version": CONFIG,
        "accessConfig.bootstrapClusterCreatorAdminPermissions": BOOLEAN,
        "bootstrapSelfManagedAddons": BOOLEAN,
        "deletionProtection": BOOLEAN,
        "vpcConfig.endpointPrivateAccess": BOOLEAN,
        "vpcConfig.endpointPublicAccess": BOOLEAN,
    },
    "aws:eks/nodeGroup:NodeGroup": {"nodeRoleArn": REFERENCE, **_NODE_GROUP_EXPLAINED},
    "aws:eks/accessEntry:AccessEntry": {"principalArn": CONFIG},
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": {"principalArn": CONFIG},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": {
        "url": REFERENCE,
        "clientIdLists[]": CONSTANT,
        "thumbprintLists[]": CONSTANT,
    },
}

# pulumi-aws fills these name properties in Check when the program leaves them out, from the logical name
# (pulumi/pulumi-terraform-bridge pkg/tfbridge AutoNameTransform; pulumi/pulumi-aws provider/resources.go).
AUTONAMED: Mapping[str, str] = {
    "aws:ec2/securityGroup:SecurityGroup": "name",
    "aws:ec2/launchTemplate:LaunchTemplate": "name",
    "aws:ec2/placementGroup:PlacementGroup": "name",
    "aws:iam/role:Role": "name",
    "aws:iam/rolePolicy:RolePolicy": "name",
    "aws:elasticache/subnetGroup:SubnetGroup": "name",
    "aws:elasticache/replicationGroup:ReplicationGroup": "replicationGroupId",
}

# Map-valued properties: their keys are data (tag keys, label keys, chosen entry names), not property names.
MAP_PROPERTIES = frozenset({"tags", "labels", "accessEntries", "accessPolicies"})


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar inside `value` with its property path (see RULES)."""
    if isinstance(value, Mapping):
        is_map = path.rsplit(".", 1)[-1].removesuffix("[]") in MAP_PROPERTIES
        for key, item in value.items():
            if is_map:
                yield f"{path}{{key}}", key
                yield from leaves(item, f"{path}{{value}}" if not isinstance(item, Mapping | list) else f"{path}{{}}")
            else:
                yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item, f"{path}[]")
    elif value is not None:
        yield path, value


def violations(type_: str, inputs: Mapping[str, Any]) -> Iterator[str]:
    """Why AWS refuses each input of a resource of type `type_` (paths the table does not rule are skipped)."""
    rules = RULES.get(type_, {})
    for path, value in leaves(inputs):
        rule = rules.get(path)
        if rule and (reason := rule.refusal(value)):
            shown = value if len(str(value)) <= 120 else f"{str(value)[:117]}..."
            yield (
                f"{path}={shown!r} breaks the {rule.name} rule ({reason}): allowed is {rule.allowed} [{rule.source}]"
            )
