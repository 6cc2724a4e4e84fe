"""The language of a pattern parsed with markers: its alternatives in, the texts with every
assertion holding out.

Takes: the alternatives of a pattern parsed with markers (IR over text and markers), whether the
pattern is searched for (any text around it, JSON Schema ``pattern``) or matched whole, its
``Markers`` and ``Limits``. Hands on: IR over text alone. Alternatives without markers are kept
as they are (searched together, as in the plain parse); in the others the assertions of the
top-level sequence are applied by products (``folding``), and what markers remain are erased
from the union of those alternatives at once (``conditions``, ``erasure``).
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex.conditions import Resolver
from moonmaskc.frontends.regex.erasure import START
from moonmaskc.frontends.regex.folding import LABEL, fold, has_markers
from moonmaskc.frontends.regex.markers import Markers
from moonmaskc.limits import Limits


def resolve_assertions(
    alternatives: list[ir.Node], search: bool, markers: Markers, limits: Limits
) -> ir.Node:
    """The texts that match one of ``alternatives`` (whole, or somewhere when ``search``) with
    every assertion holding."""
    anything = ir.star(utf8.any_char())
    resolver = Resolver(markers, limits)
    plain: list[ir.Node] = []
    parts: list[ir.Node] = []
    marked: list[ir.Node] = []
    for alternative in alternatives:
        if not has_markers(alternative):
            plain.append(alternative)
            continue
        whole = ir.seq(anything, alternative, anything) if search else alternative
        items: list[ir.Node] = list(whole.items) if isinstance(whole, ir.Seq) else [whole]
        folded = fold(items, resolver, anything if search else None, limits)
        (marked if has_markers(folded) else parts).append(folded)
    if plain:
        parts.append(ir.seq(anything, ir.alt(*plain), anything) if search else ir.alt(*plain))
    if marked:
        texts = resolver.erase(compile_ir(ir.alt(*marked), limits), START)
        parts.append(ir.Automaton(texts, LABEL))
    return ir.alt(*parts)
