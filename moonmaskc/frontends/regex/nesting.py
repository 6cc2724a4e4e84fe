"""How deeply a regex pattern nests its groups, checked on the text before any parse.

Takes: the pattern text (and ``--max-nesting``). Hands on: nothing, or a ``LimitError`` naming the
bound and the position (``check_nesting``); the ``SourceError`` for a pattern that reached Python's
recursion limit anyway (``too_deep``).
"""

from __future__ import annotations

from moonmaskc.errors import LimitError, SourceError


def check_nesting(pattern: str, max_nesting: int) -> None:
    """Refuse groups nested deeper than ``max_nesting`` (``--max-nesting``) before any recursive
    pass (the NFA builder) sees them."""
    if pattern.count("(") <= max_nesting:
        return
    depth = 0
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("^", index + 1):
                index += 1
        elif char == "(":
            depth += 1
            if depth > max_nesting:
                raise LimitError(
                    "max_nesting",
                    max_nesting,
                    f"groups nest more than {max_nesting} levels deep at position {index} of the pattern",
                    flag="--max-nesting",
                )
        elif char == ")":
            depth = max(0, depth - 1)
        index += 1


def too_deep(pattern: str) -> SourceError:
    depth = max_depth = 0
    for char in pattern:
        depth += char == "("
        depth -= char == ")"
        max_depth = max(max_depth, depth)
    return SourceError(f"groups nest too deeply to compile (about {max_depth} levels)", pattern, 0)
