"""Bad values a new user types, by class: each is refused before any resource, naming the key (and the list item),
the value and what is allowed."""

from __future__ import annotations

import pytest

from tests.conftest import rejection
from tools.offline import load_stack_config

# 41 distinct /32s of one public /24: one more than EKS takes.
FORTY_ONE = [f"100.24.10.{host}/32" for host in range(1, 42)]


@pytest.mark.parametrize("count", [1, 40])
def test_up_to_forty_api_cidrs_are_accepted(count):
    assert len(load_stack_config({"apiPublicAccessCidrs": FORTY_ONE[:count]}).api_public_access_cidrs) == count


def test_more_than_forty_api_cidrs_are_refused_before_eks_refuses_the_cluster():
    """EKS quota "Public endpoint access CIDR ranges per cluster": 40, adjustable "No"
    (https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html; aws/containers-roadmap#2174 asks for
    more). CreateCluster would fail mid-deploy, after the VPC and IAM role exist."""
    (problem,) = rejection({"apiPublicAccessCidrs": FORTY_ONE}).problems
    assert problem.startswith("apiPublicAccessCidrs has 41 CIDRs: EKS allows at most 40")
    assert "docs/policy.md" in problem


@pytest.mark.parametrize(
    ("cidrs", "reason"),
    [
        pytest.param(["0.0.0.0/0"], "[0]='0.0.0.0/0' is invalid (it is the whole internet)", id="everything"),
        # RFC 1918, RFC 6598 shared, loopback, link-local, multicast, reserved: RFC 6890 marks none of them
        # globally reachable, so no internet client reaches the public endpoint from there.
        pytest.param(["10.0.0.0/8"], "[0]='10.0.0.0/8' is invalid (it lies in 10.0.0.0/8", id="rfc1918-10"),
        pytest.param(["172.20.1.0/24"], "[0]='172.20.1.0/24' is invalid (it lies in 172.16.0.0/12", id="rfc1918-172"),
        pytest.param(["192.168.7.9/32"], "(it lies in 192.168.0.0/16", id="rfc1918-192"),
        pytest.param(["100.64.3.0/24"], "(it lies in 100.64.0.0/10", id="shared-cgnat"),
        pytest.param(["127.0.0.1/32"], "(it lies in 127.0.0.0/8", id="loopback"),
        pytest.param(["169.254.169.254/32"], "(it lies in 169.254.0.0/16", id="link-local"),
        pytest.param(["239.1.1.1/32"], "(it lies in 224.0.0.0/4", id="multicast"),
        pytest.param(["250.0.0.0/8"], "(it lies in 240.0.0.0/4", id="reserved"),
        pytest.param(["100.24.10.0/24", "10.1.0.0/16"], "apiPublicAccessCidrs[1]='10.1.0.0/16'", id="second-item"),
    ],
)
def test_api_cidrs_must_be_internet_ranges(cidrs, reason):
    """EKS's public endpoint is reached from the internet; with endpointPrivateAccess on, requests from inside
    the VPC use the private endpoint (https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html), so a
    private or reserved range admits no one and 0.0.0.0/0 admits everyone."""
    (problem,) = rejection({"apiPublicAccessCidrs": cidrs}).problems
    assert reason in problem
    assert "allowed is public IPv4 CIDRs" in problem


@pytest.mark.parametrize(
    "cidrs",
    [
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"],
        # Every public address, with the private and reserved blocks carved out.
        ["1.0.0.0/8", "2.0.0.0/7", "4.0.0.0/6", "8.0.0.0/5", "16.0.0.0/4", "32.0.0.0/3", "64.0.0.0/2", "128.0.0.0/1"],
    ],
    ids=["halves", "quarters", "all-but-private"],
)
def test_api_cidrs_that_together_admit_the_internet_are_refused(cidrs):
    (problem,) = rejection({"apiPublicAccessCidrs": cidrs}).problems
    assert problem.startswith(f"apiPublicAccessCidrs={cidrs} is invalid: together they admit every internet address")


def test_a_public_range_that_overlaps_private_space_is_still_an_internet_range():
    """8.0.0.0/5 holds 10.0.0.0/8 but also public addresses; it is wide, not wrong."""
    assert load_stack_config({"apiPublicAccessCidrs": ["8.0.0.0/5"]}).api_public_access_cidrs == ("8.0.0.0/5",)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("vpcCidr", "10.0.0.0/255.255.0.0"),
        ("vpcCidr", "10.0.0.0/0.0.255.255"),
        ("vpcCidr", "10.0.0.0/16\n"),
        ("vpcCidr", "10.0.0.0"),
        ("apiPublicAccessCidrs", ["100.24.0.0/255.255.0.0"]),
        ("apiPublicAccessCidrs", ["100.24.10.7"]),
        ("apiPublicAccessCidrs", ["100.24.10.0/24\n"]),
        ("serveSourceCidrs", ["10.0.0.0/255.0.0.0"]),
    ],
)
def test_cidrs_are_taken_in_prefix_notation_only(key, value):
    """Python's ipaddress also reads a netmask or hostmask after the slash; AWS's CIDR fields take a prefix
    length (EC2 CreateVpc CidrBlock "The IPv4 network range for the VPC, in CIDR notation. For example,
    10.0.0.0/16", https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html), so the value would
    be checked in one form and passed on in another."""
    problems = rejection({key: value}).problems
    assert any("not an IPv4 CIDR in a.b.c.d/prefix notation" in p and p.startswith(key) for p in problems)


@pytest.mark.parametrize("key", ["apiPublicAccessCidrs", "serveSourceCidrs"])
def test_a_repeated_cidr_is_named_with_the_item_it_repeats(key):
    (problem,) = rejection({key: ["100.24.10.0/24", "100.24.20.0/24", "100.24.10.0/24"]}).problems
    assert problem.startswith(f"{key}[2]='100.24.10.0/24' is invalid: it repeats {key}[0]")


@pytest.mark.parametrize("value", ['"100.24.10.0/24"', "[100.24.10.0/24]", "[1, 2]", '{"a": "b"}'])
def test_a_list_key_that_is_not_a_json_list_of_strings_says_so(value):
    (problem,) = rejection({"apiPublicAccessCidrs": value}).problems
    assert problem.startswith(f"apiPublicAccessCidrs={value!r} is invalid: allowed is a JSON list of public IPv4")
