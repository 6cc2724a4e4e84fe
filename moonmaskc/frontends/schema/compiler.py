"""The schema compiler: a JSON Schema (draft 2020-12 / draft-07) to the shared byte IR, exactly.

Takes: a schema (dict, bool, or JSON text), the whitespace policy, ``lenient``, ``refuse_unknown``,
``Limits`` and ``ref_roots`` (the local folders other documents are read from, see ``refs``).
Hands on: ``FrontendResult`` whose node accepts only serializations of valid values (compact or
per the whitespace policy, properties in declared order, canonical strings), with ``notes`` for
``inspect`` (whitespace policy, max_depth, refs unrolled, keywords ignored) and ``warnings`` (one
line per keyword ignored under ``lenient``, with its JSON pointer).

This module only dispatches: a subschema goes to ``constants`` (enum / const), ``unevaluated``
(unevaluatedProperties / unevaluatedItems, rewritten into cases of ordinary schemas),
``references`` ($ref), ``combinators`` (allOf / anyOf / oneOf / not / if, presence dependencies)
or, per instance type, through the normalising pass (``normalize``: the keywords of each type as a
checked, typed record of ``typed``) to its emitter in ``types.*``. The walk's state is a
``context.Context``; the automata it builds are cached in an ``automata.Automata``; the keyword
policy is ``policy``.

Soundness bookkeeping: complements (``not``, ``if``) and "exactly one" products are taken against
the universe of canonical values of bounded depth; they are exact only when the operand language
holds *every* canonical serialization of its valid values. Two things break that and are tracked in
``context.Flags``: objects whose key order is fixed (``ordered``) and recursion cut at ``max_depth``
(``ref_cut``). Such operands are refused with an error rather than complemented wrongly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moonmaskc import ir
from moonmaskc.automata.counted import with_markers
from moonmaskc.automata.nested import NEST_MARKER, with_nest_marker
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends import FrontendResult
from moonmaskc.frontends.deep import escalate_if_inline, run_deep
from moonmaskc.frontends.schema import combinators, constants, normalize, policy, references, unevaluated
from moonmaskc.frontends.schema.arguments import as_list
from moonmaskc.frontends.schema.automata import Automata, is_empty_node, string_char_automaton
from moonmaskc.frontends.schema.combinators.all_of import all_of
from moonmaskc.frontends.schema.constants import ALL_TYPES
from moonmaskc.frontends.schema.context import Context
from moonmaskc.frontends.schema.diagnostics import (
    costly_pointers,
    language_effect,
    lone_surrogate_error,
    lone_surrogate_pointer,
    most_costly,
    with_costly_strings,
)
from moonmaskc.frontends.schema.dialects import without_other_drafts
from moonmaskc.frontends.schema.evaluated import has_unevaluated, without_trivial
from moonmaskc.frontends.schema.layout import Layout, describe_policy
from moonmaskc.frontends.schema.merge import type_set
from moonmaskc.frontends.schema.refs import pointer_child
from moonmaskc.frontends.schema.source import parse_schema_text
from moonmaskc.frontends.schema.types import arrays, numbers, objects, strings
from moonmaskc.limits import Limits

__all__ = ["ALL_TYPES", "SchemaWalk", "compile_schema_ir", "lone_surrogate_pointer", "with_costly_strings"]


class SchemaWalk:
    """One walk of one schema: its ``Context`` (``ctx``) and its ``Automata`` (``automata``), and
    the entry points that the modules of the walk call back."""

    def __init__(self, ctx: Context, automata: Automata) -> None:
        self.ctx = ctx
        self.automata = automata
        self.limits = ctx.limits
        self.layout = ctx.layout
        self._ordered_universes: dict[tuple[int, int], ir.Node] = {}

    def node(self, schema: Any, where: str) -> ir.Node:
        """The language of ``schema`` at ``where``; nested calls count against ``max_nesting``."""
        with self.ctx.subschema(where):
            return self.node_at(schema, where)

    def node_at(self, schema: Any, where: str) -> ir.Node:
        if schema is True:
            return self.universe()
        if schema is False:
            return ir.NOTHING
        if not isinstance(schema, dict):
            raise UnsupportedError(
                f"schema {schema!r}", "a schema must be an object or a boolean", where=where
            )
        if "enum" in schema or "const" in schema:
            policy.note_policy(self.ctx, schema, where)
            return constants.enumerated(self, schema, where)
        clean = without_trivial(policy.clean(self.ctx, schema, where))
        if has_unevaluated(clean):  # the schema as written: what it evaluates goes by all of it
            return self.unevaluated((schema, where), [], where)
        if "$ref" in clean:
            if self.ctx.old_draft or len(clean) == 1:
                return references.reference(self, clean["$ref"], where)
            rest = {k: v for k, v in clean.items() if k != "$ref"}
            return self.all_of([{"$ref": clean["$ref"]}, rest], where, [where, where])
        if "allOf" in clean:
            rest = {k: v for k, v in clean.items() if k != "allOf"}
            branches = as_list(clean["allOf"], "allOf", where)
            wheres = [where, *(pointer_child(where, "allOf", i) for i in range(len(branches)))]
            return self.all_of([rest, *branches], where, wheres)
        return self.combined(clean, where)

    def all_of(self, schemas: list[Any], where: str, wheres: list[str] | None = None) -> ir.Node:
        """The values valid for every one of ``schemas`` (see ``combinators.all_of``)."""
        return all_of(self, schemas, where, wheres)

    def unevaluated(self, sealed: tuple[Any, str], others: list[tuple[Any, str]], where: str) -> ir.Node:
        """A schema with unevaluated keywords and the schemas it is conjoined with (see
        ``unevaluated``)."""
        return unevaluated.conjoined(self, sealed, others, where)

    def combined(self, schema: dict[str, Any], where: str) -> ir.Node:
        """A cleaned schema with no $ref / allOf at its top (see ``combinators``)."""
        return combinators.combined(self, schema, where)

    def typed(self, schema: dict[str, Any], where: str) -> ir.Node:
        """A cleaned schema with no combinator left: the union of its instance types."""
        types = type_set(schema)
        if types is None:
            types = set(ALL_TYPES)
        unknown = types - {*ALL_TYPES, "integer"}
        if unknown:
            raise UnsupportedError(f"type {sorted(unknown)[0]!r}", "not a JSON Schema type", where=where)
        parts: list[ir.Node] = []
        if "null" in types:
            parts.append(ir.literal(b"null"))
        if "boolean" in types:
            parts.append(ir.alt(ir.literal(b"true"), ir.literal(b"false")))
        if "number" in types or "integer" in types:
            numeric = normalize.number_keywords(self.ctx, schema, "number" in types, where)
            parts.append(numbers.numeric(self, numeric, where))
        if "string" in types:
            parts.append(strings.string(self, normalize.string_keywords(self.ctx, schema, where), where))
        if "array" in types:
            parts.append(arrays.array(self, normalize.array_keywords(schema, where), where))
        if "object" in types:
            parts.append(objects.object_node(self, normalize.object_keywords(schema, where), where))
        return ir.alt(*parts)

    def universe(self) -> ir.Node:
        """Every canonical value (``true`` as a schema), as deep as the walk may still go: the
        marker of a nest region where one may stand (outside products and key-ordered parts,
        see ``automata.nested``), else written out to the depth left."""
        ctx = self.ctx
        if ctx.nest_marker is not None and ctx.budget_end is None and ctx.key_order is None:
            ctx.nests_used = True
            return ir.byte_set(1 << ctx.nest_marker)
        depth = self.ctx.depth_left()
        self.ctx.flags.depth_cut = True
        if depth < 0:
            return ir.NOTHING
        order = self.ctx.key_order
        if order is not None:
            # Objects of the part list their known keys in its one order: so does every value.
            key = (order.serial, depth)
            found = self._ordered_universes.get(key)
            if found is None:
                found = self._ordered_universes[key] = self.automata.share(self.typed({}, "#"))
            return found
        return self.automata.universe_leaf(depth)


def compile_schema_ir(
    schema: dict[str, Any] | bool | str,
    *,
    whitespace: str = "compact",
    lenient: bool = False,
    refuse_unknown: bool = False,
    limits: Limits = Limits(),  # noqa: B008
    ref_roots: Mapping[str, Any] | None = None,
    dropped_lengths: frozenset[str] = frozenset(),
    length_counters: bool = False,
    uncounted: frozenset[tuple[int, int]] = frozenset(),
    nest_values: bool = False,
) -> FrontendResult:
    """Compile a JSON Schema (a dict, a boolean or JSON text) into byte IR, exactly (see module doc).
    ``lenient``: drop validation keywords that cannot be compiled, with a warning each (the notes
    say whether the language got wider or narrower). ``refuse_unknown``: unknown keywords and
    format names are errors instead of annotations. ``ref_roots``: URI prefix -> local folder; a
    reference to another document whose URI starts with a prefix is read from the folder (the
    official meta-schemas are read from ``jsonschema_specifications``; nothing is downloaded).
    ``length_counters``: plain strings with long length bounds become counted regions (marker
    bytes in the IR, listed in the result's ``markers``; see ``automata.counted``), but those whose
    (0, room) is in ``uncounted``. ``nest_values``: free values (``{}``, ``true``, open objects'
    other members) outside products become one marker byte each, for a nest region of any depth
    (``automata.nested``; the result's ``nest_marker`` and ``nest_level``), instead of every value
    nesting at most ``max_depth`` deep."""
    if isinstance(schema, str):
        schema = parse_schema_text(schema)
    schema, other_drafts = without_other_drafts(schema)
    layout = Layout.of(whitespace)
    ctx = Context(schema, layout, lenient, limits, refuse_unknown, ref_roots)
    for keyword, where in other_drafts:
        ctx.other_draft_keyword(keyword, where)
    ctx.dropped_lengths = dropped_lengths  # lenient: length bounds dropped for the state bound
    markers: dict[int, tuple[int, int]] = {}
    ctx.markers = markers if length_counters else None
    ctx.uncounted = uncounted
    ctx.nest_marker = NEST_MARKER if nest_values else None
    automata = Automata(layout, limits)
    walk = SchemaWalk(ctx, automata)

    def walked() -> ir.Node:
        return with_markers(markers, lambda: walk.node(schema, "#"))

    try:
        node = run_deep(lambda: with_nest_marker(ctx.nest_marker, walked), limits)
    except RecursionError as error:
        # The walk counts its nesting against --max-nesting on a stack sized for it (deep.py):
        # no flag helps a walk that reaches Python's limit anyway (but for an inline attempt's).
        escalate_if_inline(error)
        raise SourceError(
            "the schema nests too deeply for this compiler (Python's recursion limit was reached "
            f"within --max-nesting {limits.max_nesting}); simplify the nesting, and please report "
            "the schema"
        ) from None
    except UnicodeEncodeError:
        raise lone_surrogate_error(schema) from None
    except LimitError as error:  # an automaton built during the walk (a product, say) grew too big
        raise with_costly_strings(error, ctx.string_costs) from None
    result = _result(node, ctx, whitespace)
    if ctx.nests_used and ctx.nest_marker is not None:
        result.nest_marker = ctx.nest_marker
        result.nest_level = automata.nest_level()
    return result


def _result(node: ir.Node, ctx: Context, whitespace: str) -> FrontendResult:
    """The walk's node with the notes and warnings it recorded."""
    warnings = list(ctx.warnings)
    if is_empty_node(node):
        warnings.append("the schema accepts no JSON value (within the bounds applied)")
    notes = {
        "whitespace": describe_policy(whitespace),
        "max_depth": ctx.ref_depth,
        "max_depth_meaning": "recursive $ref unrolled at most this many times; values accepted by {} "
        "or true nest at most this deep",
        "refs_unrolled": sorted(ctx.refs_cut),
        "bounded_products": list(ctx.bounded_cuts),
        "ignored_keywords": [w for w in ctx.warnings if w.startswith("ignored keyword")],
        "unknown_keywords": [w for w in ctx.warnings if w.startswith(("unknown keyword", "unknown format"))],
        "openapi_keywords": [w for w in ctx.warnings if w.startswith("OpenAPI keyword")],
        "disabled_keywords": [w for w in ctx.warnings if w.startswith("disabled keyword")],
        "other_draft_keywords": [w for w in ctx.warnings if w.startswith("other draft's keyword")],
        "key_order": "declared properties in schema order, then other keys",
    }
    if ctx.effects:
        notes["language"] = language_effect(ctx.effects)
    costly = most_costly(ctx.string_costs)
    if costly:
        notes["string_length_states"] = costly
    result = FrontendResult(
        node=node, notes=notes, warnings=warnings, length_costs=costly_pointers(ctx.string_costs)
    )
    if ctx.markers:
        result.markers = dict(ctx.markers)
        result.counted_char = string_char_automaton().dfa
    return result
