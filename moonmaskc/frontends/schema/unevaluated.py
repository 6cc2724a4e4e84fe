"""``unevaluatedProperties`` and ``unevaluatedItems``, exactly, as a union of ordinary schemas.

Takes: a cleaned schema holding one or both keywords with an effect (``evaluated.has_unevaluated``)
with its JSON pointer, the schemas it is conjoined with (the other parts of an ``allOf``, each with
its pointer: their annotations do not count for it) and the walk (``compiler.SchemaWalk``).
Hands on: its language, the union over *cases* of ``all_of`` (the case's parts and those schemas).

What a schema evaluates (2020-12 core, 11.2 and 11.3; 2019-09, 9.3.1.3 and 9.3.2.4) depends on
which of its in-place subschemas hold: annotations come from the subschemas that succeed only. A
*case* is a list of parts (schemas with their pointers) and an ``evaluated.Evaluated`` such that
- sound: wherever all its parts hold, the schema holds and evaluates at least the case's keys;
- complete: a value valid for the schema satisfies the parts of some case whose keys are all the
  keys (indices) it evaluates.
Then "valid, and every unevaluated key (index) satisfies U" is exactly the union over the cases of
"the parts hold, and every key (index) outside the case's set satisfies U": fewer evaluated keys
only ask more, so a case whose set falls short of what a value evaluates never admits it wrongly.
The filter is written into the schema's own keywords (``evaluated.with_filter``), and the parts are
conjoined by ``all_of`` as any ``allOf``.

The cases, by keyword:
- the schema's own keywords (``evaluated.own_evaluated``): one case; ``not`` evaluates nothing;
- ``$ref``: the target's cases (followed in place, on the ref stack while its parts are walked,
  cut at ``--max-depth`` as any ``$ref``);
- ``allOf``: every combination of one case per branch;
- ``anyOf``: every combination of one case or nothing per branch, not nothing for all (a branch
  left out need not hold), and the whole ``anyOf`` with nothing evaluated when a branch evaluates
  nothing that matters here; when every case of every branch evaluates the same, the whole
  ``anyOf`` with that;
- ``oneOf``: per branch, its cases with the whole ``oneOf`` as one more part (left out where the
  branches are proven disjoint from their schemas, ``one_of.surely_disjoint``);
- ``if`` / ``then`` / ``else``: ``if``'s cases with ``then``'s, and "``if`` fails"
  (``{"if": ..., "then": false}``, the complement that ``if`` already needs) with ``else``'s;
- ``dependentSchemas``: per key, nothing, or the key required with the dependent schema's cases;
- a nested ``unevaluatedProperties`` / ``unevaluatedItems``: its own filter on its own cases, and
  then every key (index) evaluated;
- ``enum`` / ``const`` schemas: their own keywords only (fewer keys evaluated: stricter, exact
  where the candidates are filtered by the whole schema anyway).
Subschemas whose in-place keywords evaluate nothing that matters stay whole. The cases of a schema
are at most ``MAX_CASES``; past that, and where evaluation goes through ``$dynamicRef`` /
``$recursiveRef``, the keyword is refused (an ``UnsupportedError`` naming it, its pointer and
why; dropped with a warning under lenient).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.arguments import as_list
from moonmaskc.frontends.schema.combinators.all_of import all_of
from moonmaskc.frontends.schema.combinators.one_of import branch_view, surely_disjoint
from moonmaskc.frontends.schema.constants import enumerated
from moonmaskc.frontends.schema.evaluated import (
    ITEMS,
    NOTHING_EVALUATED,
    PROPERTIES,
    UNEVALUATED,
    Evaluated,
    is_trivial,
    own_evaluated,
    with_filter,
)
from moonmaskc.frontends.schema.policy import clean
from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

__all__ = ["MAX_CASES", "conjoined"]

MAX_CASES = 64
_DYNAMIC = ("$dynamicRef", "$recursiveRef")
_PROPERTY_KEYWORDS = ("properties", "patternProperties", "additionalProperties", PROPERTIES)
Located = tuple[Any, str]
Tracked = frozenset[str]


@dataclass(frozen=True)
class Case:
    """Parts that hold together, what they evaluate, and the $ref targets followed to reach them."""

    parts: tuple[Located, ...]
    evaluated: Evaluated
    refs: tuple[str, ...] = ()

    def joined(self, other: Case) -> Case:
        return Case(self.parts + other.parts, self.evaluated.union(other.evaluated), self.refs + other.refs)


NO_PART = Case((), NOTHING_EVALUATED)


class Refused(Exception):
    """Evaluation that cannot be compiled exactly; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def conjoined(walk: SchemaWalk, sealed: Located, others: list[Located], where: str) -> ir.Node:
    """The values valid for ``sealed`` (a schema with an unevaluated keyword) and all ``others``."""
    schema, at = sealed
    ctx = walk.ctx
    keywords = [k for k in UNEVALUATED if k in schema and not is_trivial(schema[k])]
    if "enum" in schema or "const" in schema:  # candidates: jsonschema decides, exactly
        key = "const" if "const" in schema else "enum"
        return enumerated(walk, {"allOf": [*(s for s, _ in others), schema], key: schema[key]}, at)
    try:
        cases = Expansion(walk).cases(schema, at, (), frozenset(keywords))
    except Refused as refusal:
        for keyword in keywords:
            ctx.refuse(keyword, refusal.reason, at)
        rest = {k: v for k, v in schema.items() if k not in UNEVALUATED}
        return all_of(walk, [rest, *(s for s, _ in others)], at, [at, *(w for _, w in others)])
    nodes: list[ir.Node] = []
    for case in cases:
        parts = [*case.parts, *others]
        ctx.ref_stack.extend(case.refs)
        try:
            nodes.append(all_of(walk, [s for s, _ in parts], at, [w for _, w in parts]))
        finally:
            del ctx.ref_stack[len(ctx.ref_stack) - len(case.refs) :]
    return ir.alt(*nodes)


class Expansion:
    """The cases of schemas (see the module docstring). ``tracked``: the unevaluated keywords
    whose evaluated keys (indices) the cases tell apart, those of the schemas around and the
    schema's own."""

    def __init__(self, walk: SchemaWalk) -> None:
        self.walk = walk
        self.ctx = walk.ctx
        root = self.ctx.root
        self.draft2019 = isinstance(root, dict) and "2019-09" in str(root.get("$schema", ""))

    def cases(self, schema: Any, where: str, trail: tuple[str, ...], tracked: Tracked) -> list[Case]:
        """The cases of ``schema`` at ``where``; ``trail``: the $ref targets followed in place."""
        if schema is True:
            return [NO_PART]
        if schema is False:
            return []
        if not isinstance(schema, dict):
            raise UnsupportedError(
                f"schema {schema!r}", "a schema must be an object or a boolean", where=where
            )
        for keyword in _DYNAMIC:
            if keyword in schema:
                raise Refused(
                    f"what it evaluates depends on the dynamic reference at {pointer_child(where, keyword)}"
                )
        present = {k for k in UNEVALUATED if k in schema}
        if "enum" in schema or "const" in schema:
            return [
                Case(((schema, where),), own_evaluated(schema, where, self.draft2019).everything(present))
            ]
        cleaned = clean(self.ctx, schema, where)
        own = {k: v for k, v in cleaned.items() if k not in UNEVALUATED}
        keywords = {k: cleaned[k] for k in UNEVALUATED if k in cleaned and not is_trivial(cleaned[k])}
        tracked = tracked | keywords.keys()
        target: list[list[Case]] = []  # the $ref target's parts go first, as the walk merges them
        self._reference(own, where, trail, tracked, target)
        groups: list[list[Case]] = []
        self._all_of(own, where, trail, tracked, groups)
        self._any_of(own, where, trail, tracked, groups)
        self._one_of(own, where, trail, tracked, groups)
        self._conditional(own, where, trail, tracked, groups)
        self._dependent(own, where, trail, tracked, groups)
        base = own_evaluated(own, where, self.draft2019)
        out: list[Case] = []
        what = f"the in-place subschemas at {where}"
        for before in product(target, what):
            for after in product(groups, what):
                combo = before.joined(after)
                inner = base.union(combo.evaluated)
                if keywords:
                    self._same_base(keywords, inner, where)
                first = with_filter(own, inner, keywords, where, self.draft2019) if keywords else own
                parts = (*before.parts, (first, where), *after.parts) if first else combo.parts
                out.append(Case(parts, inner.everything(present), combo.refs))
            _check(len(out), what)
        return out

    def part(self, schema: Any, where: str, trail: tuple[str, ...], tracked: Tracked) -> list[Case]:
        """The cases of a subschema, or the subschema whole where it evaluates nothing tracked."""
        if self.contributes(schema, where, tracked):
            return self.cases(schema, where, trail, tracked)
        if schema is False:
            return []
        if schema is True or schema == {}:
            return [NO_PART]
        return [Case(((schema, where),), NOTHING_EVALUATED)]

    # ------------------------------------------------------------------ the in-place keywords

    def _reference(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        ctx = self.ctx
        ref = own.get("$ref")
        if not isinstance(ref, str) or ctx.old_draft:
            return
        try:
            target_pointer, target = ctx.resolver.resolve(ref, where)
        except UnsupportedError:
            return  # the walk of the $ref reports it
        if not self.contributes(target, target_pointer, tracked):
            return
        del own["$ref"]
        if (ctx.ref_stack + list(trail)).count(target_pointer) >= ctx.ref_depth:
            ctx.refs_cut[target_pointer] = None
            ctx.flags.ref_cut = True
            groups.append([])
            return
        inner = self.cases(target, target_pointer, (*trail, target_pointer), tracked)
        groups.append([Case(c.parts, c.evaluated, (target_pointer, *c.refs)) for c in inner])

    def _all_of(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        if "allOf" not in own:
            return
        for i, branch in enumerate(as_list(own.pop("allOf"), "allOf", where)):
            groups.append(self.part(branch, pointer_child(where, "allOf", i), trail, tracked))

    def _branches(
        self, own: dict[str, Any], keyword: str, where: str, trail: tuple[str, ...], tracked: Tracked
    ) -> tuple[list[Any], list[list[Case] | None]] | None:
        """An anyOf / oneOf's branches and the cases of those that evaluate something tracked (None
        for the others); None when none does (the keyword then stays whole with the own ones)."""
        if keyword not in own:
            return None
        branches = as_list(own[keyword], keyword, where)
        wheres = [pointer_child(where, keyword, i) for i in range(len(branches))]
        contributing = [self.contributes(b, w, tracked) for b, w in zip(branches, wheres, strict=True)]
        if not any(contributing):
            return None
        del own[keyword]
        per = [
            self.cases(b, w, trail, tracked) if c else None
            for b, w, c in zip(branches, wheres, contributing, strict=True)
        ]
        return branches, per

    def _any_of(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        found = self._branches(own, "anyOf", where, trail, tracked)
        if found is None:
            return
        branches, per = found
        whole = Case((({"anyOf": branches}, where),), NOTHING_EVALUATED)
        same = uniform(per)
        if same is not None:
            groups.append([Case(whole.parts, same)])
            return
        what = f"the anyOf at {where}"
        chosen: list[tuple[bool, Case]] = [(False, NO_PART)]
        for cases in per:
            if cases is None:
                continue
            chosen = [*chosen, *((True, c.joined(b)) for _, c in chosen for b in cases)]
            _check(len(chosen) - 1, what)
        found_cases = [c for taken, c in chosen if taken]
        if any(cases is None for cases in per):
            found_cases.append(whole)
        groups.append(found_cases)

    def _one_of(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        found = self._branches(own, "oneOf", where, trail, tracked)
        if found is None:
            return
        branches, per = found
        whole: Located = ({"oneOf": branches}, where)
        same = uniform(per)
        if same is not None:
            groups.append([Case((whole,), same)])
            return
        disjoint = self._disjoint(branches, where)
        cases: list[Case] = []
        if any(p is None for p in per):
            cases.append(Case((whole,), NOTHING_EVALUATED))
        for branch_cases in per:
            for c in branch_cases or []:
                cases.append(c if disjoint else Case((whole, *c.parts), c.evaluated, c.refs))
        _check(len(cases), f"the oneOf at {where}")
        groups.append(cases)

    def _disjoint(self, branches: list[Any], where: str) -> bool:
        """Whether the oneOf's branches are pairwise disjoint by their schemas alone."""
        views = [
            branch_view(self.walk, {}, b, pointer_child(where, "oneOf", i)) for i, b in enumerate(branches)
        ]
        return all(
            surely_disjoint(views[i], views[j], self.walk)
            for i in range(len(views))
            for j in range(i + 1, len(views))
        )

    def _conditional(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        if "if" not in own:
            return
        condition, then, otherwise = own["if"], own.get("then", True), own.get("else", True)
        located = [(condition, "if"), (then, "then"), (otherwise, "else")]
        if not any(self.contributes(s, pointer_child(where, k), tracked) for s, k in located):
            return
        for keyword in ("if", "then", "else"):
            own.pop(keyword, None)
        taken = product(
            [
                self.part(condition, pointer_child(where, "if"), trail, tracked),
                self.part(then, pointer_child(where, "then"), trail, tracked),
            ],
            f"the if at {where}",
        )
        failed = Case((({"if": condition, "then": False}, where),), NOTHING_EVALUATED)
        not_taken = [
            failed.joined(c) for c in self.part(otherwise, pointer_child(where, "else"), trail, tracked)
        ]
        _check(len(taken) + len(not_taken), f"the if at {where}")
        groups.append([*taken, *not_taken])

    def _dependent(
        self,
        own: dict[str, Any],
        where: str,
        trail: tuple[str, ...],
        tracked: Tracked,
        groups: list[list[Case]],
    ) -> None:
        dependents = own.get("dependentSchemas")
        if PROPERTIES not in tracked or not isinstance(dependents, dict):
            return
        for key, dependent in dependents.items():
            at = pointer_child(where, "dependentSchemas", key)
            if not self.contributes(dependent, at, tracked):
                continue
            present = Case((({"required": [key]}, where),), NOTHING_EVALUATED)
            groups.append([NO_PART, *(present.joined(c) for c in self.cases(dependent, at, trail, tracked))])

    def _same_base(self, keywords: dict[str, Any], inner: Evaluated, where: str) -> None:
        """The filter walks the unevaluated schemas (and ``contains`` schemas) at ``where``: refused
        where a ``$ref`` inside them could resolve against another base URI there."""
        resolver = self.ctx.resolver
        if not resolver.has_embedded_resources:
            return
        here = resolver.base_at(where)
        counted = inner.contains if ITEMS in keywords and not inner.all_items else ()
        moved = [*keywords.values(), *(s for p, s in counted if resolver.base_at(p) == here)]
        if len(moved) < len(keywords) + len(counted) or any(_holds_id(s) for s in moved):
            raise Refused(
                "a schema it applies (or a contains schema it counts) lies in another resource "
                "($id): its references would resolve against the wrong base URI"
            )

    # ------------------------------------------------------------------ what matters

    def contributes(self, schema: Any, where: str, tracked: Tracked, seen: set[str] | None = None) -> bool:
        """Whether ``schema`` or one of its in-place subschemas has a keyword that evaluates keys
        (indices) for a tracked keyword, or a dynamic reference (which may)."""
        if not isinstance(schema, dict):
            return False
        seen = set() if seen is None else seen
        if any(k in schema for k in _DYNAMIC) or self._evaluates(schema, tracked):
            return True
        if "enum" in schema or "const" in schema:
            return False
        children: list[Located] = []
        for keyword in ("allOf", "anyOf", "oneOf"):
            if isinstance(schema.get(keyword), list):
                children += [(b, pointer_child(where, keyword, i)) for i, b in enumerate(schema[keyword])]
        if "if" in schema:
            children += [(schema[k], pointer_child(where, k)) for k in ("if", "then", "else") if k in schema]
        dependents = schema.get("dependentSchemas")
        if PROPERTIES in tracked and isinstance(dependents, dict):
            children += [(d, pointer_child(where, "dependentSchemas", k)) for k, d in dependents.items()]
        if any(self.contributes(s, w, tracked, seen) for s, w in children):
            return True
        ref = schema.get("$ref")
        if not isinstance(ref, str) or self.ctx.old_draft:
            return False
        try:
            target_pointer, target = self.ctx.resolver.resolve(ref, where)
        except UnsupportedError:
            return False
        if target_pointer in seen:
            return False
        seen.add(target_pointer)
        return self.contributes(target, target_pointer, tracked, seen)

    def _evaluates(self, schema: dict[str, Any], tracked: Tracked) -> bool:
        """Whether the schema's own keywords evaluate keys (indices) for a tracked keyword."""
        if PROPERTIES in tracked and any(k in schema for k in _PROPERTY_KEYWORDS):
            return True
        if ITEMS not in tracked:
            return False
        if "items" in schema or ITEMS in schema:
            return True
        return not self.draft2019 and ("prefixItems" in schema or "contains" in schema)


def _holds_id(schema: Any) -> bool:
    """Whether a schema or one of its subschemas declares an ``$id`` (values of enum and const
    aside). Iterative."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str):
                return True
            stack += [v for k, v in node.items() if k not in DATA_KEYWORDS]
        elif isinstance(node, list):
            stack += node
    return False


def uniform(per: list[list[Case] | None]) -> Evaluated | None:
    """What every case of every branch evaluates, when that is one and the same (and every branch
    has a case); then the whole combinator is one case."""
    found: Evaluated | None = None
    for cases in per:
        if not cases:
            return None
        for case in cases:
            if found is not None and case.evaluated != found:
                return None
            found = case.evaluated
    return found


def product(groups: list[list[Case]], what: str) -> list[Case]:
    """Every combination of one case per group (at most ``MAX_CASES``)."""
    out = [NO_PART]
    for group in groups:
        out = [a.joined(b) for a in out for b in group]
        _check(len(out), what)
    return out


def _check(count: int, what: str) -> None:
    if count > MAX_CASES:
        raise Refused(
            f"what it evaluates depends on which in-place subschemas hold, and {what} makes more than "
            f"{MAX_CASES} cases of that to compile"
        )
