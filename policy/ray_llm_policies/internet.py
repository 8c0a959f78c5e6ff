"""Whether a set of CIDRs admits the whole internet, judged on their union (`0.0.0.0/1` + `128.0.0.0/1` is as open as
`0.0.0.0/0`): the one home of this rule, shared by the pack and the program's settings, so standard library only."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# RFC 6890 special-purpose IPv4 blocks that are not globally reachable: no internet client has one
# of these source addresses, so a set missing only these still admits the whole internet.
IPV4_NOT_ON_THE_INTERNET = tuple(
    ipaddress.IPv4Network(c)
    for c in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
# Every IPv6 address IANA has allocated for global unicast lies in 2000::/3
# (https://www.iana.org/assignments/ipv6-address-space/ipv6-address-space.xhtml).
IPV6_INTERNET = ipaddress.IPv6Network("2000::/3")


def _networks(cidrs: Iterable[str]) -> list[IpNetwork]:
    """The CIDRs that parse; anything else (an unknown preview value, a typo) admits no one here."""
    networks: list[IpNetwork] = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(str(cidr), strict=False))
        except ValueError:
            continue
    return networks


def _uncovered(whole: list[IpNetwork], blocks: Iterable[IpNetwork]) -> list[IpNetwork]:
    """What is left of `whole` once every block of the same IP version is taken out."""
    for block in blocks:
        rest: list[IpNetwork] = []
        for part in whole:
            if part.version != block.version or not part.overlaps(block):
                rest.append(part)
            elif not part.subnet_of(block):  # type: ignore[arg-type]  # of one version: checked above
                rest.extend(part.address_exclude(block))  # type: ignore[arg-type]
        whole = rest
    return whole


def covers_the_internet(cidrs: Iterable[str]) -> bool:
    """Whether every globally reachable IPv4 address, or every IPv6 one, is inside one of `cidrs`."""
    networks = _networks(cidrs)
    ipv4_left = _uncovered([ipaddress.IPv4Network("0.0.0.0/0")], (*IPV4_NOT_ON_THE_INTERNET, *networks))
    ipv6_left = _uncovered([IPV6_INTERNET], networks)
    return not ipv4_left or not ipv6_left
