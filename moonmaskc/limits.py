"""Bounds on every blow-up of compilation, each with the CLI flag that raises it.

Takes: user options. Hands on: a frozen ``Limits`` that every stage consults; a stage that exceeds
one raises ``LimitError`` naming the bound and its flag.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

DEFAULT_MAX_STATES = 200_000
DEFAULT_MAX_REPEAT = 100_000
DEFAULT_MAX_DEPTH = 3
DEFAULT_MAX_TABLE_CELLS = 1 << 29
NFA_STATES_PER_DFA_STATE = 8


@dataclass(frozen=True)
class Limits:
    """``max_states``: DFA states (``--max-states``); ``max_repeat``: the largest counted repetition
    bound (``--max-repeat``); ``max_depth``: how deep recursive rules or schemas unroll
    (``--max-depth``); ``max_table_cells``: states x distinct token behaviours in a token table,
    the memory bound of linking a vocabulary (``--max-table-cells``). The NFA may hold at most
    ``max_states * 8`` states."""

    max_states: int = DEFAULT_MAX_STATES
    max_repeat: int = DEFAULT_MAX_REPEAT
    max_depth: int = DEFAULT_MAX_DEPTH
    max_table_cells: int = DEFAULT_MAX_TABLE_CELLS

    @property
    def max_nfa_states(self) -> int:
        return self.max_states * NFA_STATES_PER_DFA_STATE

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
