"""What the schema compiler says beyond its IR: the notes on dropped keywords and costly strings, and
the errors for lone surrogates and state bounds.

Takes: what a walk recorded (the effects of dropped keywords, the states that string length bounds
need) or the schema that failed. Hands on: note text, ``LimitError`` / ``SourceError`` values.
"""

from __future__ import annotations

from typing import Any

from moonmaskc.errors import LimitError, SourceError
from moonmaskc.frontends.schema.refs import pointer_child

# Strings whose length bounds need this many states or more are noted (the most costly few), so
# that a DFA past --max-states can say where its states go.
COSTLY_STRING_STATES = 1000
COSTLY_STRINGS_NOTED = 5


def language_effect(effects: dict[str, None]) -> str:
    """What the keywords dropped under lenient did to the language, for the notes."""
    if len(effects) == 2:
        return (
            "not the schema's: keywords were dropped where they widen it and where they narrow it "
            "(inside not / if / an exactly-one oneOf); see ignored_keywords"
        )
    if "wider" in effects:
        return "wider than the schema's: it may accept values the schema rejects (see ignored_keywords)"
    return (
        "narrower than the schema's: it may reject values the schema accepts (keywords dropped "
        "inside not / if; see ignored_keywords)"
    )


def lone_surrogate_pointer(value: Any) -> str | None:
    """The JSON pointer of the first key or string in ``value`` that holds a lone surrogate (a
    ``\\ud800`` escape with no partner), or None. Iterative."""
    stack: list[tuple[Any, str]] = [(value, "#")]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            if _has_lone_surrogate(current):
                return where
        elif isinstance(current, dict):
            for key, item in reversed(current.items()):
                child = pointer_child(where, str(key))
                if isinstance(key, str) and _has_lone_surrogate(key):
                    return child
                stack.append((item, child))
        elif isinstance(current, list):
            stack.extend((item, f"{where}/{i}") for i, item in reversed(list(enumerate(current))))
    return None


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate_error(schema: Any) -> SourceError:
    """The error for a schema holding text that UTF-8 cannot encode, naming where."""
    where = (lone_surrogate_pointer(schema) or "#").encode("utf-8", "backslashreplace").decode("utf-8")
    return SourceError(
        f"the schema holds a lone surrogate (a \\uD800-\\uDFFF escape with no partner) at {where}: "
        "a constant, an enum value or a property name must be text that UTF-8 can encode; "
        "write the character itself or a valid surrogate pair"
    )


def most_costly(string_costs: dict[str, int]) -> dict[str, int]:
    """The few string length bounds that need the most states (at least ``COSTLY_STRING_STATES``)."""
    costly = sorted(string_costs.items(), key=lambda item: -item[1])
    return dict([item for item in costly if item[1] >= COSTLY_STRING_STATES][:COSTLY_STRINGS_NOTED])


def costly_pointers(costly: dict[str, int]) -> dict[str, int]:
    """``most_costly``'s entries (``"maxLength 300 at #/a/maxLength"``) by keyword pointer."""
    return {label.rsplit(" at ", 1)[-1]: states for label, states in costly.items()}


def with_costly_strings(error: LimitError, costly: dict[str, int]) -> LimitError:
    """``error`` itself, or when it is the state bound and ``costly`` (length keyword and pointer
    -> states it needs) names strings, the same error listing the most costly few (most costly
    first: a schema's long strings are where its states usually go), with every one of at least
    ``COSTLY_STRING_STATES`` in its ``costly`` (by pointer), for lenient rounds to drop from."""
    top = most_costly(costly)
    if error.bound != "max_states" or not top:
        return error
    listed = "; ".join(f"{where} (at least {states} states)" for where, states in top.items())
    every = {label: states for label, states in costly.items() if states >= COSTLY_STRING_STATES}
    return LimitError(
        error.bound,
        error.limit,
        f"{error.message}; the length bounds that need the most states: {listed}",
        error.flag,
        costly_pointers(every),
    )
