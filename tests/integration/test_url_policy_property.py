"""Every spelling of an IPv4 address gets the URL policy's verdict of the address
(hypothesis); the listed spellings are in tests/unit/test_url_policy.py."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_citecheck.stages.url_policy import address_refusal, check, literal_address


def _spell(value: int, parts: int, bases: list[str]) -> str:
    """``value`` (a 32-bit address) written as ``parts`` numbers (inet_aton's forms:
    the last number fills the remaining bytes), each in the base named in ``bases``."""
    octets = list(value.to_bytes(4, "big"))
    numbers = [*octets[: parts - 1], int.from_bytes(bytes(octets[parts - 1 :]), "big")]
    out = []
    for number, base in zip(numbers, bases, strict=False):
        if base == "hex":
            out.append(hex(number))
        elif base == "octal" and number:
            out.append("0" + oct(number)[2:])
        else:
            out.append(str(number))
    return ".".join(out)


@given(
    value=st.integers(0, 2**32 - 1),
    parts=st.integers(1, 4),
    bases=st.lists(st.sampled_from(["decimal", "hex", "octal"]), min_size=4, max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_every_spelling_of_an_address_gets_the_verdict_of_the_address(
    value: int, parts: int, bases: list[str]
) -> None:
    address = ipaddress.IPv4Address(value)
    spelling = _spell(value, parts, bases)
    assert literal_address(spelling) == address
    expected = address_refusal(address) is None
    assert (check("public", f"http://{spelling}/page") is None) is expected
    mapped = f"http://[::ffff:{address}]/page"
    assert (check("public", mapped) is None) is expected
