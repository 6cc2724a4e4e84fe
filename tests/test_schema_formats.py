"""``format`` languages: sampled strings pass independent checkers; tricky values go the right way.

Oracles: jsonschema's Draft 2020-12 FormatChecker where it has a checker for the format (some need
optional packages: rfc3339-validator for time/date-time, isoduration for duration, fqdn for hostname,
rfc3987 for uri; without them that oracle is skipped), and Python-side references (``datetime``,
``ipaddress``, ``uuid``, ``urllib.parse``, plain string checks; for json-pointer,
relative-json-pointer, uri-template, iri and iri-reference the ABNF regexes of
``test_schema_formats_pointers``).

Values are checked as canonical JSON writes their content (``format_string_dfa`` on the escaped
body), so formats whose values may hold ``"``, ``\\`` or control characters are checked too.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import random
import re
import urllib.parse
import uuid
from collections.abc import Callable
from functools import cache

import jsonschema
import numpy as np
import pytest

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.sample import sample
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.canonical import escape_text
from moonmaskc.frontends.schema.formats import (
    EMAIL_LOCAL_MAX_LENGTH,
    ESCAPED_CONTENT,
    FORMATS,
    HOSTNAME_MAX_LENGTH,
    format_body_node,
    format_node,
    format_string_dfa,
)
from moonmaskc.limits import Limits
from tests.conftest import data_path
from tests.test_schema_formats_pointers import ORACLES

CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
SAMPLES_PER_FORMAT = 300
# jsonschema's checkers that reject valid values of these formats (so no oracle for them): see
# ``test_schema_formats_pointers``.
CHECKER_DISAGREES = {"relative-json-pointer", "uri-template", "iri", "iri-reference"}
# Formats whose values may hold non-ASCII characters (all others are printable ASCII).
NON_ASCII = {"json-pointer", "relative-json-pointer", "uri-template", "iri", "iri-reference"}


@cache
def dfa_of(name: str) -> DFA:
    """The format's language over canonical JSON string bodies (escapes included)."""
    return format_string_dfa(name, Limits())


def accepts(name: str, value: str) -> bool:
    return dfa_of(name).accepts(escape_text(value).encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# Python-side references, written independently of the IR
# ---------------------------------------------------------------------------------------------


def _iso_for_python(value: str) -> str:
    """RFC 3339 text in the form Python's fromisoformat reads: upper case, <= 6 fraction digits."""
    value = value.upper()
    return re.sub(r"\.(\d{1,6})\d*", r".\1", value)


def ref_date(value: str) -> bool:
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", value, re.ASCII)) and bool(
        datetime.date.fromisoformat(value)
    )


def ref_time(value: str) -> bool:
    if not re.fullmatch(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", value, re.ASCII):
        return False
    return datetime.time.fromisoformat(_iso_for_python(value)).tzinfo is not None


def ref_date_time(value: str) -> bool:
    return len(value) > 11 and value[10] in "Tt" and ref_date(value[:10]) and ref_time(value[11:])


def ref_duration(value: str) -> bool:
    match = re.fullmatch(
        r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?", value
    )
    if not match or value in ("P", "PT") or value.endswith("T"):
        return False
    return not (match.group(3) and any(match.group(i) for i in (1, 2, 4, 5, 6, 7)))


def ref_hostname(value: str) -> bool:
    if not 1 <= len(value) <= 253:
        return False
    labels = value.split(".")
    return all(
        1 <= len(label) <= 63
        and re.fullmatch(r"[A-Za-z0-9-]+", label, re.ASCII)
        and not label.startswith("-")
        and not label.endswith("-")
        for label in labels
    )


def ref_email(value: str) -> bool:
    local, at, domain = value.rpartition("@")
    if not at or not local or len(local) > 64:
        return False
    atext = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+"
    if not re.fullmatch(rf"{atext}(\.{atext})*", local, re.ASCII):
        return False
    if domain.startswith("[IPv6:") and domain.endswith("]"):
        return ref_ipv6(domain[6:-1])
    if domain.startswith("[") and domain.endswith("]"):
        return ref_ipv4(domain[1:-1])
    return ref_hostname(domain)


def ref_ipv4(value: str) -> bool:
    try:
        return str(ipaddress.IPv4Address(value)) == value
    except ValueError:
        return False


def ref_ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return "%" not in value


def ref_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36 and all(value[i] == "-" for i in (8, 13, 18, 23))


def ref_uri(value: str) -> bool:
    parts = urllib.parse.urlsplit(value)
    allowed = re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]%]*", value, re.ASCII)
    bad_percent = re.search(r"%(?![0-9A-Fa-f]{2})", value)
    return bool(parts.scheme) and value[len(parts.scheme)] == ":" and bool(allowed) and not bad_percent


def ref_uri_reference(value: str) -> bool:
    allowed = re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]%]*", value, re.ASCII)
    if not allowed or re.search(r"%(?![0-9A-Fa-f]{2})", value):
        return False
    if re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", value, re.ASCII):
        return ref_uri(value)
    return ":" not in re.split(r"[/?#]", value, maxsplit=1)[0]


REFERENCES: dict[str, Callable[[str], bool]] = {
    "date": ref_date,
    "time": ref_time,
    "date-time": ref_date_time,
    "duration": ref_duration,
    "email": ref_email,
    "hostname": ref_hostname,
    "ipv4": ref_ipv4,
    "ipv6": ref_ipv6,
    "uuid": ref_uuid,
    "uri": ref_uri,
    "uri-reference": ref_uri_reference,
    **ORACLES,
}


# ---------------------------------------------------------------------------------------------
# Sampled strings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_sampled_strings_are_valid(name: str) -> None:
    dfa = dfa_of(name)
    rng = random.Random(name)
    has_checker = name in CHECKER.checkers and name not in CHECKER_DISAGREES
    for _ in range(SAMPLES_PER_FORMAT):
        drawn = sample(dfa, rng, max_len=80, stop_probability=0.15)
        assert drawn is not None
        value = json.loads(b'"' + drawn + b'"')
        assert REFERENCES[name](value), value
        if has_checker:
            assert CHECKER.conforms(value, name), value


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_language_is_safe_inside_json_quotes(name: str) -> None:
    """A format's content language is its own canonical string body (no character JSON escapes;
    printable ASCII but for the formats of NON_ASCII), unless it is escaped (ESCAPED_CONTENT)."""
    dfa = compile_ir(format_node(name))
    live_bytes = {
        byte for byte in range(256) for state in range(1, dfa.num_states) if dfa.step(state, byte) != 0
    }
    assert live_bytes, name
    if name in ESCAPED_CONTENT:
        assert {0x00, 0x0A, 0x22, 0x5C} <= live_bytes, name
        return
    assert all(0x20 <= byte and byte not in b'"\\' for byte in live_bytes), name
    if name not in NON_ASCII:
        assert all(byte < 0x7F for byte in live_bytes), name


# ---------------------------------------------------------------------------------------------
# Completeness on dense sets of valid values, and tricky values
# ---------------------------------------------------------------------------------------------


def test_every_calendar_day_of_chosen_years() -> None:
    years = [1, 4, 99, 100, 400, 1600, 1700, 1896, 1900, 1904, 1999, 2000, 2023, 2024, 2100, 2400, 9996, 9999]
    for year in years:
        for month in range(0, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}"
                try:
                    datetime.date(year, month, day)
                    valid = True
                except ValueError:
                    valid = False
                assert accepts("date", text) == valid, text


def test_leap_years_match_the_calendar_for_random_years() -> None:
    rng = random.Random(3)
    for year in [*rng.sample(range(1, 10000), 400), *range(1, 10000, 100)]:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        assert accepts("date", f"{year:04d}-02-29") == leap, year
        assert accepts("date", f"{year:04d}-02-28")


def test_times_and_offsets() -> None:
    for hour in (0, 9, 23, 24):
        for minute in (0, 59, 60):
            for second in (0, 59, 60):
                for offset in ("Z", "z", "+00:00", "-23:59", "+24:00", "+05:60", ""):
                    text = f"{hour:02d}:{minute:02d}:{second:02d}{offset}"
                    valid = (
                        hour < 24 and minute < 60 and second < 60 and offset not in ("", "+24:00", "+05:60")
                    )
                    assert accepts("time", text) == valid, text
                    assert accepts("date-time", "2024-02-29T" + text) == valid, text


def test_every_ipv4_shape() -> None:
    rng = random.Random(4)
    for _ in range(2000):
        octets = [rng.choice([rng.randint(0, 255), rng.randint(0, 999)]) for _ in range(4)]
        spelled = [rng.choice(["{}", "{:02d}", "{:03d}"]).format(o) for o in octets]
        text = ".".join(spelled)
        assert accepts("ipv4", text) == ref_ipv4(text), text


def test_ipv6_spellings_of_random_addresses() -> None:
    rng = random.Random(6)
    for _ in range(400):
        groups = [rng.choice([0, 0, 0, 1, rng.randint(0, 0xFFFF)]) for _ in range(8)]
        address = ipaddress.IPv6Address(b"".join(g.to_bytes(2, "big") for g in groups))
        spellings = {address.compressed, address.exploded, address.exploded.upper()}
        if groups[:5] == [0] * 5 and groups[5] in (0, 0xFFFF):
            spellings.add(str(address.ipv4_mapped or address))
        for text in spellings:
            assert accepts("ipv6", text), text
        # Every way of writing it with one "::" over a run of zero groups is valid too.
        hexes = [f"{g:x}" for g in groups]
        for start in range(8):
            for end in range(start + 1, 9):
                if all(g == 0 for g in groups[start:end]):
                    text = ":".join(hexes[:start]) + "::" + ":".join(hexes[end:])
                    assert accepts("ipv6", text) == ref_ipv6(text), text


VALID = {
    "date": ["2024-02-29", "2000-02-29", "1963-06-19", "0001-01-01", "9999-12-31"],
    "time": ["08:30:06Z", "08:30:06.283185z", "23:59:59+23:59", "00:00:00-00:00"],
    "date-time": ["1963-06-19T08:30:06.283185Z", "1937-01-01t12:00:27.87+00:20", "2024-02-29T00:00:00-01:00"],
    "duration": ["P4DT12H30M5S", "P4Y", "PT0S", "P0D", "P1M", "PT1M", "PT36H", "P1W", "P2Y1M", "P1DT1M"],
    "email": ["joe.bloggs@example.com", "te~st@example.com", "a@b", "joe.bloggs@[127.0.0.1]", "j@[IPv6:::1]"],
    "hostname": ["www.example.com", "hostname", "host-name", "h0stn4me", "1host", "a" * 63],
    "ipv4": ["192.168.0.1", "0.0.0.0", "255.255.255.255", "87.10.0.1"],
    "ipv6": ["::1", "::", "::abef", "1:d6::42", "1::d6:192.168.0.1", "::ffff:192.168.0.1", "1:2:3:4:5:6:7::"],
    "uuid": ["2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08-aa98-11ea-b4aa-73b441d16380"],
    "uri": [
        "http://foo.bar/?baz=qux#quux",
        "http://foo.com/blah_(wikipedia)_blah#cite-1",
        "http://foo.bar/?q=Test%20URL-encoded%20stuff",
        "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
        "ldap://[2001:db8::7]/c=GB?one?objectClass",
        "mailto:John.Doe@example.com",
        "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
        "tel:+1-816-555-1212",
        "http://[v1.fe:a]:8080/",
        "x:",
    ],
    "uri-reference": [
        "http://foo.bar/?baz=qux#quux",
        "//foo.bar/?baz=qux#quux",
        "/abc",
        "abc",
        "",
        "#fragment",
        "?query",
        "./a:b",
        "../x/y%20z",
        "mailto:a@b",
    ],
    "json-pointer": ["", "/", "/a~0b~1c", '/k"l/i\\j/\x00\n', "/é/😎/"],
    "relative-json-pointer": ["0", "0#", "1/a", "120/foo/bar", "100", '3/"/'],
    "uri-template": ["", "http://example.com/{term:1}/{term}", "{+a,b*}", "a%41{%41.b}", "a'b", "é😀"],
    "iri": ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "urn:é", "http://[V1.fe]", "x:?\U000f0000"],
    "iri-reference": ["", "âππ", "/âππ", "//ƒøø/", "#ƒrägmênt", "?\ue000"],
}

INVALID = {
    "date": [
        "2023-02-29",
        "1900-02-29",
        "2023-02-30",
        "2023-13-01",
        "2023-00-10",
        "2023-04-31",
        "0000-01-01",
        "2023-1-01",
        "20230101",
        "2023-06-1",
    ],
    "time": [
        "08:30:06",
        "24:00:00Z",
        "08:60:00Z",
        "08:30:60Z",
        "08:30:06+24:00",
        "8:30:06Z",
        "08:30:06.Z",
        "08:30:06 Z",
        "23:59:60Z",
    ],
    "date-time": [
        "1990-02-31T15:59:59.123-08:00",
        "1963-06-19 08:30:06Z",
        "1963-06-19T08:30:06",
        "2023-02-29T00:00:00Z",
    ],
    "duration": ["P", "PT", "P1", "PT1H1S", "P1D2H", "P1W1D", "P2S", "PT1D", "1D", "P1Y1Y", "P-1D", "P1.5D"],
    "email": [
        "2962",
        "test..2962@example.com",
        ".test@example.com",
        "test.@example.com",
        "a@-b.com",
        "@b.com",
        '"joe bloggs"@example.com',
        "a@[127.0.0.300]",
        "a@b.",
        ("x" * (EMAIL_LOCAL_MAX_LENGTH + 1)) + "@b",
    ],
    "hostname": [
        "-a",
        "a-",
        "a..b",
        "a.",
        ".a",
        "a_b",
        "",
        "a" * 64,
        "xn--X",
        "XN--aa---o47jg78q",
        "ab--c",
        "a" * (HOSTNAME_MAX_LENGTH + 1),
    ],
    "ipv4": [
        "256.1.1.1",
        "01.1.1.1",
        "1.1.1",
        "1.1.1.1.1",
        "1.1.1.1.",
        "0x7f000001",
        "1.2.3.04",
        "1.2.3.4\n",
        "",
    ],
    "ipv6": [
        ":::",
        "12345::",
        "1::2::3",
        "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7",
        "::ffff:01.1.1.1",
        ":1:2::",
        "1:2:3:4:5:6:7:8::",
        "::1.2.3",
        "g::1",
        "fe80::1%eth0",
        "1:2:3:4:5:6:7::8",
    ],
    "uuid": [
        "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
        "2eb8aa08aa9811eab4aa73b441d16380",
        "2eb8aa08-aa98-11ea-b4ga-73b441d16380",
        "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
    ],
    "uri": [
        "//foo.bar/?baz=qux#quux",
        "/abc",
        "abc",
        "http:// shouldfail.com",
        "1http://a",
        "http://a/%zz",
        "http://a/b\\c",
        'http://a/"b"',
        "http://a/\u00e9",
        ":x",
        "http://[1::2::3]/",
    ],
    "uri-reference": ["a:b:c d", "\\\\WINDOWS\\fileshare", "abc#f#g%", "a b", ":x", "http://a/%zz", "é"],
    "json-pointer": ["a", "#", "/~", "/~2", "/a~", "#/a"],
    "relative-json-pointer": ["", "01", "-1/a", "+1/a", "0##", "1#/a", "1\n", "/a", "0+1/a"],
    "uri-template": [
        "{}",
        "{a,}",
        "{a..b}",
        "{v:0}",
        "{v:10000}",
        "{v:01}",
        "{=a}",
        "a b",
        "a\x7fb",
        "}",
        "{",
    ],
    "iri": ["/abc", "âππ", "http://[::ffff:192.168.0.01]", "http://ƒ/\n", "x:#\ue000", "é:x"],
    "iri-reference": ["\\\\WINDOWS\\filëßåré", "#ƒräg\\mênt", "é:b", "#\ue000", " "],
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_known_valid_values(name: str) -> None:
    for value in VALID[name]:
        assert accepts(name, value), value
        assert REFERENCES[name](value), value


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_known_invalid_values(name: str) -> None:
    for value in INVALID[name]:
        assert not accepts(name, value), value


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_json_schema_test_suite_never_accepts_invalid(name: str) -> None:
    """Every invalid string of the official suite is rejected; report valid ones we reject."""
    path = data_path(
        "schemas", "json-schema-test-suite", "draft2020-12", "optional", "format", f"{name}.json"
    )
    rejected_valid = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        for case in group["tests"]:
            if not isinstance(case["data"], str):
                continue
            accepted = accepts(name, case["data"])
            if not case["valid"]:
                assert not accepted, (case["description"], case["data"])
            elif not accepted:
                rejected_valid.append(case["data"])
    # Only the documented approximations may reject valid values.
    documented = {
        "time": lambda v: ":60" in v,
        "date-time": lambda v: ":60" in v,
        "email": lambda v: v.startswith('"'),
        "hostname": lambda v: len(v) > HOSTNAME_MAX_LENGTH or "--" in v,
    }
    for value in rejected_valid:
        assert name in documented and documented[name](value), value


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(UnsupportedError, match=r"format 'color'.*#/properties/c"):
        format_node("color", where="#/properties/c")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_string_dfa_is_the_string_body_restricted_to_the_format(name: str) -> None:
    """The memoised constant equals the intersection computed afresh (minimal DFAs in canonical
    numbering are equal exactly when the languages are)."""
    from moonmaskc.automata.product import intersect
    from moonmaskc.frontends.schema.canonical import STRING_BODY

    fresh = intersect(compile_ir(STRING_BODY), compile_ir(format_body_node(name)))
    memoised = format_string_dfa(name, Limits())
    assert memoised is format_string_dfa(name, Limits())
    for field in ("transitions", "byte_class", "accepting"):
        assert np.array_equal(getattr(memoised, field), getattr(fresh, field)), (name, field)


def test_state_bound_holds_whatever_was_memoised_before() -> None:
    """A format built under the default limits is not handed to a compile with a lower state bound:
    the memo is per limits, so the bound fails the same way before and after."""
    import moonmaskc
    from moonmaskc.errors import LimitError

    schema = {"type": "string", "format": "email"}
    with pytest.raises(LimitError, match="max_states"):
        moonmaskc.compile_schema(schema, max_states=300)
    moonmaskc.compile_schema(schema)
    with pytest.raises(LimitError, match="max_states"):
        moonmaskc.compile_schema(schema, max_states=300)
