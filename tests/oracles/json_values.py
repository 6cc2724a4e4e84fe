"""Facts about JSON values that tests compare compiled automata against.

Takes: a JSON value (as ``json.loads`` returns it). Hands on: ``nesting_depth``, how many arrays
and objects nest in it (0 for a scalar, 1 for ``[]`` or ``[1]``).
"""

from __future__ import annotations

from typing import Any


def nesting_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((nesting_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting_depth(v) for v in value), default=0)
    return 0
