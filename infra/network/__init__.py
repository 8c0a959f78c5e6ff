"""The network: the VPC, its public and private subnets in the Availability Zones that offer the GPU type, NAT,
routes and the S3 gateway endpoint (`vpc`).

Imports: infra.settings, infra.components.
"""
