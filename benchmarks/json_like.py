"""JSON-like test languages built directly from IR, for token-table benchmarks and tests.

Takes: nothing but sizes. Hands on: IR nodes shaped like the JSON a schema front end produces (an
object with string fields under ``maxLength``, integers, enums, arrays), so that the token table can
be measured before, or independently of, the JSON Schema front end.
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.frontends import utf8

_ESCAPE = ir.seq(ir.text("\\"), ir.alt(*(ir.text(c) for c in '"\\/bfnrt')))


def json_string(max_length: int | None = None) -> ir.Node:
    """A JSON string literal with at most ``max_length`` characters (unbounded when None)."""
    char = ir.alt(utf8.any_char(exclude=[(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]), _ESCAPE)
    return ir.seq(ir.text('"'), ir.repeat(char, 0, max_length), ir.text('"'))


def json_integer() -> ir.Node:
    digits = ir.alt(ir.text("0"), ir.seq(ir.byte_range(0x31, 0x39), ir.star(ir.byte_range(0x30, 0x39))))
    return ir.seq(ir.optional(ir.text("-")), digits)


def json_array(item: ir.Node, separator: str = ", ") -> ir.Node:
    items = ir.seq(item, ir.star(ir.seq(ir.text(separator), item)))
    return ir.seq(ir.text("["), ir.optional(items), ir.text("]"))


def json_object(fields: list[tuple[str, ir.Node]]) -> ir.Node:
    parts: list[ir.Node] = [ir.text("{")]
    for index, (name, value) in enumerate(fields):
        if index:
            parts.append(ir.text(", "))
        parts.append(ir.text(f'"{name}": '))
        parts.append(value)
    parts.append(ir.text("}"))
    return ir.seq(*parts)


def user_like(max_length: int = 32) -> ir.Node:
    """Like examples' user.json: bounded strings, an integer, an enum, an array of strings."""
    role = ir.alt(*(ir.text(f'"{r}"') for r in ("admin", "editor", "viewer")))
    return json_object(
        [
            ("name", json_string(max_length)),
            ("email", json_string(max_length * 2)),
            ("age", json_integer()),
            ("role", role),
            ("tags", json_array(json_string(16))),
        ]
    )


def tool_call_like() -> ir.Node:
    """A tool call: a name enum and free-form string arguments."""
    name = ir.alt(*(ir.text(f'"{n}"') for n in ("get_weather", "search", "send_email", "calendar_add")))
    arguments = json_object([("query", json_string()), ("limit", json_integer()), ("units", json_string(8))])
    return json_object([("name", name), ("arguments", arguments)])
