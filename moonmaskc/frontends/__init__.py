"""Front ends: regex, GBNF and JSON Schema sources, each parsed into the shared byte IR.

Every front end hands on a ``FrontendResult``: the IR node plus ``notes`` (bounds applied and other
facts that ``inspect`` shows, JSON-able), ``warnings`` (for example keywords ignored under
``--lenient``) and, from the schema front end, ``length_costs``: the states each string length
bound it kept needs, by the bound's JSON pointer (what a lenient compile drops first when the
automaton would pass ``--max-states``), and ``markers``: the marker bytes that stand for counted
string bodies (``automata.counted``), with ``counted_char`` the character automaton they repeat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moonmaskc import ir

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA


@dataclass
class FrontendResult:
    node: ir.Node
    notes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    length_costs: dict[str, int] = field(default_factory=dict)
    # Length counters: marker byte -> (lo, hi) of ``counted_char`` (``automata.counted``).
    markers: dict[int, tuple[int, int]] = field(default_factory=dict)
    counted_char: DFA | None = None
    # Nest regions: the marker byte of the free values, and one level of any value
    # (``automata.nested``); None when the free values are written out.
    nest_marker: int | None = None
    nest_level: DFA | None = None
