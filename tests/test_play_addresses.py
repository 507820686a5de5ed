"""The addresses ``--host 0.0.0.0`` prints: this machine's own, found from the interface
its outgoing traffic would leave by as well as from its host name, since /etc/hosts on
Debian and Ubuntu maps the host name to a loopback address (127.0.1.1); loopback only when
nothing else is found. The resolver and the route are injected, so no test needs a network."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from rummy500_env.play.__main__ import addresses


def resolver(*found: str) -> Any:
    """A ``getaddrinfo`` that resolves the host name to `found`."""

    def getaddrinfo(name: str, port: Any, family: int = 0, *args: Any) -> list[Any]:
        out = []
        for a in found:
            fam = socket.AF_INET6 if ":" in a else socket.AF_INET
            if family in (0, fam):
                sockaddr = (a, 0, 0, 0) if fam == socket.AF_INET6 else (a, 0)
                out.append((fam, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    return getaddrinfo


def route(address: str | None) -> Any:
    """An outgoing-interface probe that finds `address` (None: no route)."""
    return lambda family: address


def no_resolver(*args: Any) -> Any:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def test_a_host_name_mapped_to_loopback_does_not_hide_the_lan_address():
    """Debian's /etc/hosts: the host name is 127.0.1.1; the route says 192.168.1.20."""
    found = addresses("0.0.0.0", resolve=resolver("127.0.1.1"), route=route("192.168.1.20"))
    assert found == ["192.168.1.20"]


def test_every_address_found_once_and_loopback_left_out():
    found = addresses(
        "0.0.0.0",
        resolve=resolver("10.0.0.5", "127.0.1.1", "192.168.1.20"),
        route=route("192.168.1.20"),
    )
    assert found == ["192.168.1.20", "10.0.0.5"]


@pytest.mark.parametrize(
    ("resolve", "probe"),
    [
        (resolver("127.0.1.1"), route(None)),
        (no_resolver, route(None)),
        (no_resolver, route("127.0.0.1")),
    ],
    ids=["host-name-on-loopback", "no-name", "route-on-loopback"],
)
def test_loopback_when_nothing_else_is_found(resolve, probe):
    assert addresses("0.0.0.0", resolve=resolve, route=probe) == ["127.0.0.1"]


def test_ipv6_wildcard_lists_ipv6_addresses_without_link_local_ones():
    found = addresses(
        "::",
        resolve=resolver("fe80::1", "2001:db8::7", "::1", "10.0.0.5"),
        route=route("2001:db8::5"),
    )
    assert found == ["2001:db8::5", "2001:db8::7"]
    assert addresses("::", resolve=resolver("fe80::1"), route=route(None)) == ["::1"]


def test_a_named_host_is_printed_as_it_is():
    assert addresses("192.168.1.20") == ["192.168.1.20"]
    assert addresses("127.0.0.1") == ["127.0.0.1"]


def test_this_machine_gives_at_least_one_address():
    """The real probe and resolver: some address, and loopback only alone."""
    found = addresses("0.0.0.0")
    assert found
    assert found == ["127.0.0.1"] or not any(a.startswith("127.") for a in found)
