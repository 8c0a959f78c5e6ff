"""The network: the VPC, its public and private subnets, NAT, routes and the S3 gateway endpoint (`vpc`), in the
Availability Zones that offer the GPU type (`placement`), cut by a plain subnet plan (`subnets`).

Imports: infra.settings, infra.components.
"""
