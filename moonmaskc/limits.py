"""Bounds on every blow-up of compilation, each with the CLI flag that raises it.

Takes: user options. Hands on: a frozen ``Limits`` that every stage consults; a stage that exceeds
one raises ``LimitError`` naming the bound and its flag. A bound that is not an integer is a
``TypeError``, one outside its range a ``ValueError``, when the ``Limits`` is made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral

DEFAULT_MAX_STATES = 200_000
DEFAULT_MAX_REPEAT = 100_000
DEFAULT_MAX_DEPTH = 3
DEFAULT_MAX_TABLE_CELLS = 1 << 30
"""States x distinct token behaviours (maps) of a token table walk. Since artifact format 3 no dense
[states, classes] table exists; the native walk keeps its maps sparse (Github_ultra/o21375 with
GPT-2, 159,011 states x 5,172 maps = 822 M cells: 1.05 GB peak RSS for the whole compile). The
pure path keeps them dense: up to 2 (uint16 states) or 4 bytes a cell."""
DEFAULT_MAX_WORK = 20_000_000
DEFAULT_MAX_NESTING = 1_000
LARGEST_MAX_NESTING = 20_000
NFA_STATES_PER_DFA_STATE = 8


LARGEST_BOUND = 1 << 56  # any bound (and 8 x max_states, the NFA bound) fits the native 64-bit integers
_RANGES = {
    "max_states": (0, LARGEST_BOUND),  # (0: every automaton is past the bound; the CLI asks for 1)
    "max_repeat": (0, LARGEST_BOUND),
    "max_depth": (0, LARGEST_BOUND),
    "max_table_cells": (0, LARGEST_BOUND),
    "max_work": (0, LARGEST_BOUND),
    "max_nesting": (1, LARGEST_MAX_NESTING),  # the stack of the deep walks is sized from it
}
"""The range of each bound; each is an integer (``TypeError`` otherwise) in it (``ValueError``
outside)."""


@dataclass(frozen=True)
class Limits:
    """``max_states``: DFA states (``--max-states``); ``max_repeat``: the largest counted repetition
    bound (``--max-repeat``); ``max_depth``: how deep recursive rules or schemas unroll
    (``--max-depth``); ``max_table_cells``: states x distinct token behaviours in a token table,
    the memory bound of linking a vocabulary (``--max-table-cells``); ``max_work``: the estimated
    work of the subset construction, computed on the IR before any automaton is built
    (``--max-work``, see ``moonmaskc.automata.work``): nested counted repetitions such as
    ``(a{1,100}){1,100}`` fail at once on it instead of running for seconds; ``max_nesting``: how
    deep the front ends may nest (schema values, GBNF rule expansions, regex groups; at most
    ``LARGEST_MAX_NESTING``, ``--max-nesting``): the walks recurse, and the stack they run on is
    sized from this bound. The NFA may hold at most ``max_states * 8`` states."""

    max_states: int = DEFAULT_MAX_STATES
    max_repeat: int = DEFAULT_MAX_REPEAT
    max_depth: int = DEFAULT_MAX_DEPTH
    max_table_cells: int = DEFAULT_MAX_TABLE_CELLS
    max_work: int = DEFAULT_MAX_WORK
    max_nesting: int = DEFAULT_MAX_NESTING

    def __post_init__(self) -> None:
        for name, (least, most) in _RANGES.items():
            given = getattr(self, name)
            if isinstance(given, bool) or not isinstance(given, Integral):
                raise TypeError(f"{name} must be an integer, not {given!r}")
            value = int(given)  # (a numpy integer becomes a Python int)
            if not least <= value <= most:
                raise ValueError(f"{name} must be in {least}..{most}, not {value}")
            object.__setattr__(self, name, value)

    @property
    def max_nfa_states(self) -> int:
        return self.max_states * NFA_STATES_PER_DFA_STATE

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
