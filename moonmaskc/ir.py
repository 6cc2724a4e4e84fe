"""The shared intermediate representation: regular languages over bytes.

Takes: calls from the front ends (regex, GBNF, JSON Schema). Hands on: immutable, hashable nodes
that the NFA builder (``moonmaskc.automata.thompson``) compiles, and that ``to_regex`` prints back
as regex text (so that ``inspect`` shows the grammar really built).

Nodes:
- ``ByteSet(mask)``: one byte out of a set; ``mask`` is a 256-bit integer (bit b set = byte b
  allowed). ``ByteSet(0)`` is the empty language, exported as ``NOTHING``.
- ``Seq(items)``: concatenation; ``Seq(())`` is the empty string, exported as ``EPSILON``.
- ``Alt(items)``: alternation (union).
- ``Repeat(item, min, max)``: ``min`` to ``max`` copies, ``max=None`` for unbounded.
- ``Automaton(dfa)``: a language already compiled to a DFA (results of intersection, complement
  and other DFA products), embedded back into the IR.

Composite nodes cache their hash, so hashing and comparing large shared trees stays cheap.

Always build nodes through the smart constructors ``seq``, ``alt``, ``repeat``, ``byte_set``,
``literal``, ``text``: they flatten, merge byte sets, drop empty parts and keep the invariants that
the printer and the NFA builder rely on (no nested Seq in Seq, no nested Alt in Alt, at most one
ByteSet in an Alt, no Repeat with max == 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from moonmaskc.automata.native import native

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA

FULL_MASK = (1 << 256) - 1


class ByteSet(tuple[int]):
    """One byte out of a set: ``mask``, a 256-bit integer (bit b set = byte b allowed). A tuple of
    that one integer underneath, so that hashing and comparing one (every Seq and Alt hashes its
    items when it is made) is C code: a Python ``__hash__`` cost a call per byte of every key."""

    __slots__ = ()

    def __new__(cls, mask: int) -> ByteSet:
        return tuple.__new__(cls, (mask,))

    if TYPE_CHECKING:

        @property
        def mask(self) -> int: ...

    else:
        mask = property(itemgetter(0))

    def __getnewargs__(self) -> tuple[int]:
        return (self[0],)

    def __repr__(self) -> str:
        return f"ByteSet(mask={self[0]})"

    def __contains__(self, byte: object) -> bool:
        return isinstance(byte, int) and bool(self[0] >> byte & 1)

    def bytes(self) -> list[int]:
        return [b for b in range(256) if self[0] >> b & 1]


# Seq, Alt and Repeat write their own ``__init__`` (``init=False``): the dataclass one, then a
# ``__post_init__`` and two helpers, cost four Python calls a node, and a schema's front end makes
# tens of thousands of nodes. ``_set`` is how a frozen dataclass sets its fields.
_set = object.__setattr__


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Seq:
    items: tuple[Node, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _size: int = field(init=False, repr=False, compare=False)
    _automata: bool = field(init=False, repr=False, compare=False)

    def __init__(self, items: tuple[Node, ...]) -> None:
        _set(self, "items", items)
        _set(self, "_hash", hash(("seq", items)))
        _set_summary(self, items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Seq) and _equal(self, other))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Alt:
    items: tuple[Node, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _size: int = field(init=False, repr=False, compare=False)
    _automata: bool = field(init=False, repr=False, compare=False)

    def __init__(self, items: tuple[Node, ...]) -> None:
        _set(self, "items", items)
        _set(self, "_hash", hash(("alt", items)))
        _set_summary(self, items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Alt) and _equal(self, other))


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Repeat:
    item: Node
    min: int
    max: int | None
    _hash: int = field(init=False, repr=False, compare=False)
    _size: int = field(init=False, repr=False, compare=False)
    _automata: bool = field(init=False, repr=False, compare=False)

    def __init__(self, item: Node, min: int, max: int | None) -> None:
        _set(self, "item", item)
        _set(self, "min", min)
        _set(self, "max", max)
        _set(self, "_hash", hash(("repeat", item, min, max)))
        _set_summary(self, (item,))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Repeat) and _equal(self, other))


@dataclass(frozen=True, slots=True, eq=False)
class Automaton:
    """A DFA embedded as a leaf. Compared by identity."""

    dfa: DFA
    label: str = "automaton"


Node = ByteSet | Seq | Alt | Repeat | Automaton

SIZE_CAP = 1 << 62
"""Tree sizes (shared subtrees counted each time) are kept up to this: past it, they only need to
compare as huge."""


def _set_summary(node: Seq | Alt | Repeat, items: tuple[Node, ...]) -> None:
    """Set ``node``'s ``_size`` (1 plus the tree size of each item, composite items caching theirs;
    capped at ``SIZE_CAP``) and ``_automata`` (whether an ``Automaton`` leaf lies among the items or
    in them), in one pass over the items."""
    total = 1
    automata = False
    for item in items:
        kind = type(item)
        if kind is Seq or kind is Alt or kind is Repeat:
            total += item._size  # type: ignore[union-attr]
            if item._automata:  # type: ignore[union-attr]
                automata = True
        else:
            total += 1
            if kind is Automaton:
                automata = True
    _set(node, "_size", total if total < SIZE_CAP else SIZE_CAP)
    _set(node, "_automata", automata)


def holds_automaton(node: Node) -> bool:
    """Whether an ``Automaton`` leaf lies in ``node`` (read off the node: no walk)."""
    kind = type(node)
    return kind is Automaton or ((kind is Seq or kind is Alt or kind is Repeat) and node._automata)  # type: ignore[union-attr]


NOTHING = ByteSet(0)
EPSILON = Seq(())


def mask_of(byte_values: Iterable[int]) -> int:
    mask = 0
    for b in byte_values:
        mask |= 1 << b
    return mask


def range_mask(lo: int, hi: int) -> int:
    """Mask of bytes lo..hi inclusive (empty when lo > hi)."""
    if lo > hi:
        return 0
    return ((1 << (hi - lo + 1)) - 1) << lo


def byte_set(mask: int) -> Node:
    return ByteSet(mask & FULL_MASK)


def byte_range(lo: int, hi: int) -> Node:
    return ByteSet(range_mask(lo, hi))


_SINGLE_BYTES = tuple(ByteSet(1 << b) for b in range(256))
"""One node per byte value: literals (JSON keys and punctuation above all) are built from these."""


def literal(data: bytes) -> Node:
    if len(data) == 1:
        return _SINGLE_BYTES[data[0]]
    return Seq(tuple(map(_SINGLE_BYTES.__getitem__, data)))


def text(value: str) -> Node:
    """The UTF-8 encoding of ``value``."""
    return literal(value.encode("utf-8"))


def seq(*nodes: Node) -> Node:
    items: list[Node] = []
    for node in nodes:
        kind = type(node)
        if kind is Seq:
            items.extend(node.items)  # type: ignore[union-attr]
        elif kind is ByteSet and not node.mask:  # type: ignore[union-attr]
            return NOTHING
        else:
            items.append(node)
    if len(items) == 1:
        return items[0]
    return Seq(tuple(items))


def alt(*nodes: Node) -> Node:
    items: list[Node] = []
    seen: set[Node] = set()
    mask = 0
    has_byteset = False
    has_epsilon = False
    # Depth first, in order, with a list for a stack: a nested function calling itself would be a
    # reference cycle per call, holding the nodes until the cyclic collector runs.
    pending: list[Node] = list(reversed(nodes))
    while pending:
        part = pending.pop()
        if isinstance(part, Alt):
            pending.extend(reversed(part.items))
        elif isinstance(part, ByteSet):
            if part.mask:
                mask |= part.mask
                has_byteset = True
        elif type(part) is Seq and not part.items:  # (== EPSILON, without the structural compare)
            has_epsilon = True
        elif isinstance(part, Repeat) and part.min == 0 and part.max == 1:
            has_epsilon = True
            pending.append(part.item)
        elif part not in seen:
            seen.add(part)
            items.append(part)
    if has_byteset:
        items.insert(0, ByteSet(mask))
    if not items:
        return EPSILON if has_epsilon else NOTHING
    core = items[0] if len(items) == 1 else Alt(tuple(items))
    return repeat(core, 0, 1) if has_epsilon else core


def repeat(node: Node, min_count: int, max_count: int | None) -> Node:
    if min_count < 0 or (max_count is not None and max_count < min_count):
        raise ValueError(f"bad repetition bounds {{{min_count},{max_count}}}")
    if max_count == 0 or (type(node) is Seq and not node.items):  # node == EPSILON
        return EPSILON
    if type(node) is ByteSet and not node.mask:  # node == NOTHING
        return EPSILON if min_count == 0 else NOTHING
    if min_count == 1 and max_count == 1:
        return node
    if isinstance(node, Repeat):
        inner = node
        # (x*)?, (x*)*, (x+)*, (x?)* , (x*)+ are all x*; (x+)+ is x+; (x?)? is x?.
        if inner.max is None and inner.min <= 1 and (max_count is None or max_count >= 1):
            if min_count == 0 or inner.min == 0:
                return Repeat(inner.item, 0, None)
            if min_count == 1:
                return Repeat(inner.item, 1, None)
        if inner.min == 0 and inner.max == 1 and max_count is None:
            return Repeat(inner.item, 0, None)
        if inner.min == 0 and inner.max == 1 and min_count == 0 and max_count == 1:
            return inner
    return Repeat(node, min_count, max_count)


def optional(node: Node) -> Node:
    return repeat(node, 0, 1)


def star(node: Node) -> Node:
    return repeat(node, 0, None)


def plus(node: Node) -> Node:
    return repeat(node, 1, None)


def fold(
    node: Node,
    combine: Callable[[Node, list[Any]], Any],
    known: Callable[[Node], Any] | None = None,
) -> Any:
    """``combine(node, values of its children)`` bottom-up over ``node``, iteratively (no recursion
    limit however deep the tree) and once per distinct subtree object (shared subtrees are folded
    once: the values are memoised by identity while the walk holds the root). Leaves (byte sets,
    automata) are combined as soon as their parent is reached, never pushed on the work list.
    ``known(node)``, when given, is asked before a composite node's children are walked: a value
    other than None is taken as the node's, and its subtree is not walked."""
    done: dict[int, Any] = {}
    work: list[tuple[Node, bool]] = [(node, False)]
    while work:
        current, expanded = work.pop()
        key = id(current)
        if key in done:
            continue
        kind = type(current)
        if kind is Seq or kind is Alt:
            children: tuple[Node, ...] = current.items  # type: ignore[union-attr]
        elif kind is Repeat:
            children = (current.item,)  # type: ignore[union-attr]
        else:
            done[key] = combine(current, [])
            continue
        if expanded:
            done[key] = combine(current, [done[id(child)] for child in children])
            continue
        if known is not None:
            value = known(current)
            if value is not None:
                done[key] = value
                continue
        work.append((current, True))
        for child in reversed(children):
            child_key = id(child)
            if child_key in done:
                continue
            child_kind = type(child)
            if child_kind is ByteSet or child_kind is Automaton:
                done[child_key] = combine(child, [])
            else:
                work.append((child, False))
    return done[id(node)]


def _equal(first: Node, second: Node) -> bool:
    """Structural equality of two nodes, iteratively (the dataclass ``==`` on item tuples would
    recurse once per level of nesting). Cached hashes cut most comparisons short."""
    pairs: list[tuple[Node, Node]] = [(first, second)]
    while pairs:
        a, b = pairs.pop()
        if a is b:
            continue
        kind = type(a)
        if kind is not type(b):
            return False
        if kind is ByteSet:
            if a.mask != b.mask:  # type: ignore[union-attr]
                return False
            continue
        if kind is Automaton or hash(a) != hash(b):
            return False
        if kind is Repeat:
            if (a.min, a.max) != (b.min, b.max):  # type: ignore[union-attr]
                return False
            pairs.append((a.item, b.item))  # type: ignore[union-attr]
            continue
        items_a, items_b = a.items, b.items  # type: ignore[union-attr]
        if len(items_a) != len(items_b):
            return False
        pairs.extend(zip(items_a, items_b, strict=True))
    return True


def size(node: Node) -> int:
    """Number of nodes in the tree (shared subtrees counted each time; at most ``SIZE_CAP``),
    cached by every composite node at construction."""
    kind = type(node)
    return node._size if kind is Seq or kind is Alt or kind is Repeat else 1  # type: ignore[union-attr]


def size_exceeds(node: Node, limit: int) -> bool:
    """Whether ``size(node) > limit`` (constant time)."""
    return size(node) > limit


def _nullable_step(node: Node, children: list[bool]) -> bool:
    if isinstance(node, ByteSet):
        return False
    if isinstance(node, Seq):
        return all(children)
    if isinstance(node, Alt):
        return any(children)
    if isinstance(node, Repeat):
        return node.min == 0 or children[0]
    return bool(node.dfa.accepting[node.dfa.start])


def nullable(node: Node) -> bool:
    """Whether the empty string is in the language."""
    return bool(fold(node, _nullable_step))


# ---------------------------------------------------------------------------------------------
# Printing back to regex text
# ---------------------------------------------------------------------------------------------

_META = set(b"\\^$.|?*+()[]{}")
_CLASS_META = set(b"\\]^-[")
_NAMED_BYTES = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x0C: "\\f", 0x0B: "\\v"}
_DIGITS = range_mask(0x30, 0x39)
_WORD = _DIGITS | range_mask(0x41, 0x5A) | range_mask(0x61, 0x7A) | (1 << 0x5F)
_SPACE = mask_of(b" \t\n\r\f\v")


def _byte_text(b: int, in_class: bool) -> str:
    if b in _NAMED_BYTES:
        return _NAMED_BYTES[b]
    if 0x20 <= b < 0x7F:
        ch = chr(b)
        meta = _CLASS_META if in_class else _META
        return "\\" + ch if b in meta else ch
    return f"\\x{b:02x}"


def mask_runs(mask: int) -> list[tuple[int, int]]:
    """The runs of adjacent bytes in ``mask`` as half-open ``(first, end)`` pairs, in byte order
    (one big-integer step per run, not per byte)."""
    runs: list[tuple[int, int]] = []
    while mask:
        first = (mask & -mask).bit_length() - 1
        shifted = mask >> first
        length = (shifted ^ (shifted + 1)).bit_length() - 1  # the trailing ones of shifted
        runs.append((first, first + length))
        mask ^= ((1 << length) - 1) << first
    return runs


def _ranges(mask: int) -> list[tuple[int, int]]:
    return [(first, end - 1) for first, end in mask_runs(mask)]


def _class_body(mask: int) -> str:
    parts: list[str] = []
    for shorthand_mask, name in ((_WORD, "\\w"), (_DIGITS, "\\d"), (_SPACE, "\\s")):
        if mask & shorthand_mask == shorthand_mask:
            parts.append(name)
            mask &= ~shorthand_mask
    for lo, hi in _ranges(mask):
        if lo == hi:
            parts.append(_byte_text(lo, True))
        elif hi == lo + 1:
            parts.append(_byte_text(lo, True) + _byte_text(hi, True))
        else:
            parts.append(f"{_byte_text(lo, True)}-{_byte_text(hi, True)}")
    return "".join(parts)


@lru_cache(maxsize=4096)
def _print_byteset(mask: int) -> str:
    """The regex text of one byte set (cached: a few classes recur all over a grammar)."""
    if mask == 0:
        return "[^\\x00-\\xff]"
    if mask == FULL_MASK:
        return "[\\x00-\\xff]"
    if mask & (mask - 1) == 0:
        return _byte_text(mask.bit_length() - 1, False)
    for shorthand_mask, name in ((_WORD, "\\w"), (_DIGITS, "\\d"), (_SPACE, "\\s")):
        if mask == shorthand_mask:
            return name
    inverse = FULL_MASK & ~mask
    direct = _class_body(mask)
    negated = _class_body(inverse)
    if len(negated) + 1 < len(direct):
        return f"[^{negated}]"
    return f"[{direct}]"


def _is_atom(text_: str, node: Node) -> bool:
    return isinstance(node, (ByteSet, Automaton)) or (isinstance(node, Seq) and len(node.items) == 0)


PRINT_MEMO_SIZES = (32, 4096)
"""Subtrees of these sizes (nodes, shared ones counted each time) keep their printed text per
process (``to_regex``): the constants every schema holds (a JSON string's character, its escapes
spelled out) print once, not once a compile. Bounded both ways: smaller ones print faster than a
lookup pays back, bigger ones are rarely met twice and their texts are long."""
PRINT_MEMO_ENTRIES = 1024
_PRINTED: dict[tuple[Node, tuple[tuple[int, str], ...]], str] = {}


def to_regex(node: Node, byte_names: dict[int, str] | None = None) -> str:
    """Print ``node`` as a regex over bytes (non-ASCII bytes as ``\\xNN``). Iterative: a tree
    nested however deep prints without reaching Python's recursion limit. ``byte_names``: single
    bytes printed as the given text instead (the markers of counted regions)."""
    names = {1 << byte: name for byte, name in (byte_names or {}).items()}
    names_key = tuple(sorted((byte_names or {}).items()))
    smallest, largest = PRINT_MEMO_SIZES
    module = native("printer")
    if module is not None:  # the same walk, compiled (``automata/_native/printer.pyx``)
        memo, entries = _PRINTED, PRINT_MEMO_ENTRIES
        return str(module.printed(node, names, names_key, smallest, largest, memo, entries, _print_byteset))

    def known(item: Node) -> str | None:
        size = item._size  # type: ignore[union-attr]
        return _PRINTED.get((item, names_key)) if smallest <= size <= largest else None

    def step(item: Node, parts: list[str]) -> str:
        kind = type(item)
        if kind is ByteSet and names and item.mask in names:  # type: ignore[union-attr]
            return names[item.mask]  # type: ignore[union-attr]
        text_ = _print_step(item, parts)
        # A subtree that holds an automaton is never kept (nor its DFA with it).
        if kind is not ByteSet and kind is not Automaton and not item._automata:  # type: ignore[union-attr]
            if smallest <= item._size <= largest:  # type: ignore[union-attr]
                if len(_PRINTED) >= PRINT_MEMO_ENTRIES:
                    _PRINTED.clear()
                _PRINTED[(item, names_key)] = text_
        return text_

    return str(fold(node, step, known))


def _print_step(node: Node, parts: list[str]) -> str:
    """The text of ``node`` given the texts of its children."""
    if isinstance(node, ByteSet):
        return _print_byteset(node.mask)
    if isinstance(node, Automaton):
        return f"(?#{node.label}: {node.dfa.num_states} states)"
    if isinstance(node, Seq):
        if not node.items:
            return "(?:)"
        return "".join(
            f"(?:{part})" if isinstance(item, Alt) else part
            for item, part in zip(node.items, parts, strict=True)
        )
    if isinstance(node, Alt):
        return "|".join(parts)
    inner = parts[0]
    if not _is_atom(inner, node.item):
        inner = f"(?:{inner})"
    lo, hi = node.min, node.max
    if (lo, hi) == (0, None):
        suffix = "*"
    elif (lo, hi) == (1, None):
        suffix = "+"
    elif (lo, hi) == (0, 1):
        suffix = "?"
    elif hi is None:
        suffix = f"{{{lo},}}"
    elif lo == hi:
        suffix = f"{{{lo}}}"
    else:
        suffix = f"{{{lo},{hi}}}"
    return inner + suffix


def describe(node: Node) -> dict[str, Any]:
    """A small JSON-able summary of a node (kind and size), for metadata."""
    return {"kind": type(node).__name__, "size": size(node)}
