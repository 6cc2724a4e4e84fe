"""The schema walker: a JSON Schema (draft 2020-12 / draft-07) to the shared byte IR, exactly.

Takes: a schema (dict, bool, or JSON text), the whitespace policy, ``lenient`` and ``Limits``.
Hands on: ``FrontendResult`` whose node accepts only serializations of valid values (compact or
per the whitespace policy, properties in declared order, canonical strings), with ``notes`` for
``inspect`` (whitespace policy, max_depth, refs unrolled, keywords ignored) and ``warnings`` (one
line per keyword ignored under ``lenient``, with its JSON pointer).

Soundness bookkeeping: complements (``not``, ``if``) and "exactly one" products are taken against
the universe of canonical values of bounded depth; they are exact only when the operand language
holds *every* canonical serialization of its valid values. Two things break that and are tracked in
``_Flags``: objects whose key order is fixed (``ordered``) and recursion cut at ``max_depth``
(``ref_cut``). Such operands are refused with an error rather than complemented wrongly.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference, disjoint, intersect, is_empty, product, union
from moonmaskc.errors import LimitError, MoonmaskError, SourceError, UnsupportedError
from moonmaskc.frontends import FrontendResult
from moonmaskc.frontends.deep import run_deep
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.contains import counted_elements
from moonmaskc.frontends.schema.dependencies import KEYWORDS as DEPENDENCY_KEYWORDS
from moonmaskc.frontends.schema.dependencies import dependency_branches
from moonmaskc.frontends.schema.keywords import (
    COMPILED,
    OPENAPI,
    OPENAPI_READ_WRITE,
    REFUSED,
    SPEC_FORMATS,
    is_annotation,
    is_disabled_keyword,
    is_known,
    unknown_format_warning,
    unknown_keyword_warning,
)
from moonmaskc.frontends.schema.layout import Layout, describe_policy
from moonmaskc.frontends.schema.merge import merge, type_set
from moonmaskc.frontends.schema.property_keys import key_regions, matching_patterns
from moonmaskc.frontends.schema.refs import RefResolver, pointer_child
from moonmaskc.frontends.schema.sequences import Member, ordered_members, positional_elements
from moonmaskc.frontends.schema.source import parse_schema_text
from moonmaskc.frontends.work import check_work
from moonmaskc.limits import Limits

ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")
SHARE_SIZE = 4000
# Strings whose length bounds need this many states or more are noted (the most costly few), so
# that a DFA past --max-states can say where its states go.
COSTLY_STRING_STATES = 1000
COSTLY_STRINGS_NOTED = 5
# Universe automata depend only on (whitespace policy, depth, limits): built once per process.
_UNIVERSE_CACHE: dict[tuple[str, int, Limits], ir.Automaton] = {}
_LATER_DRAFTS_ONLY = frozenset({"dependentRequired", "dependentSchemas", "minContains", "maxContains"})
_OLD_DRAFTS = ("draft-07", "draft-06", "draft-04", "draft-03")


@dataclass
class _Flags:
    ordered: bool = False
    ref_cut: bool = False
    depth_cut: bool = False


@dataclass(frozen=True)
class _RefResult:
    """A $ref target walked once: its node and what the walk recorded on the way."""

    node: ir.Node
    flags: _Flags
    warnings: tuple[str, ...]
    refs_cut: tuple[str, ...]
    effects: tuple[str, ...]


@dataclass
class _Walk:
    root: Any
    layout: Layout
    lenient: bool
    limits: Limits
    refuse_unknown: bool = False
    warnings: dict[str, None] = field(default_factory=dict)
    # How the validation keywords dropped under lenient move the language ("wider", "narrower").
    effects: dict[str, None] = field(default_factory=dict)
    # +1 where the language being built is the schema's own, -1 inside a complement (a keyword
    # dropped there narrows the result), 0 where it counts both ways (an "exactly one" product).
    polarity: int = 1
    refs_cut: dict[str, None] = field(default_factory=dict)
    string_costs: dict[str, int] = field(default_factory=dict)  # length keyword -> states it needs
    ref_stack: list[str] = field(default_factory=list)
    nesting: int = 0
    walk_depth: int = 0  # nested ``node`` calls, against limits.max_nesting
    budget_end: int | None = None
    flags: _Flags = field(default_factory=_Flags)

    def __post_init__(self) -> None:
        declared = self.root.get("$schema", "") if isinstance(self.root, dict) else ""
        self.old_draft = any(d in str(declared) for d in _OLD_DRAFTS)
        self.new_draft = bool(declared) and not self.old_draft
        id_keywords = ("id",) if any(d in str(declared) for d in ("draft-04", "draft-03")) else ("$id",)
        self.resolver = RefResolver(
            self.root, self.old_draft if declared else None, id_keywords if declared else ("$id", "id")
        )
        self._universes: dict[int, ir.Node] = {}
        self._dfas: dict[ir.Node, DFA] = {}
        self._shared: dict[ir.Node, ir.Automaton] = {}
        self._derived: dict[tuple[str, tuple[int, ...]], tuple[ir.Automaton, tuple[DFA, ...]]] = {}
        self._regions: dict[
            tuple[int, ...], tuple[list[tuple[tuple[int, ...], ir.Automaton]], tuple[DFA, ...]]
        ] = {}
        self._refs: dict[tuple[Any, ...], _RefResult] = {}
        self._numbers: dict[tuple[Any, ...], ir.Node] = {}
        self.openapi_document = has_openapi_intent(self.root)

    @cached_property
    def validator(self) -> Any:
        """A jsonschema validator of the root schema (with format checks), for enum and const
        candidates. Built on first use: importing jsonschema can take a second (its optional format
        packages build parsers at import), and most schemas never need it."""
        from jsonschema import FormatChecker, validators

        validator_class = validators.validator_for(self.root, default=validators.Draft202012Validator)
        return validator_class(self.root, format_checker=FormatChecker())

    # ------------------------------------------------------------------ helpers

    def dfa(self, node: ir.Node) -> DFA:
        """The minimal DFA of ``node``, compiled once per walk (nodes cache their hash)."""
        if isinstance(node, ir.Automaton):
            return node.dfa
        found = self._dfas.get(node)
        if found is None:
            check_work(node, self.limits)
            found = self._dfas[node] = compile_ir(node, self.limits)
        return found

    def share(self, node: ir.Node) -> ir.Node:
        """``node``, or when it is big, its DFA as a leaf: one leaf object per node, so that the
        expressions around equal nodes stay equal (automata compare by identity) and their DFAs
        are found again in the walk's cache instead of being compiled once more."""
        if isinstance(node, ir.Automaton) or not ir.size_exceeds(node, SHARE_SIZE):
            return node
        found = self._shared.get(node)
        if found is None:
            found = self._shared[node] = ir.Automaton(self.dfa(node), "shared")
        return found

    def derived(self, label: str, inputs: tuple[DFA, ...], build: Callable[[], DFA]) -> ir.Automaton:
        """The DFA ``build`` makes from ``inputs`` as a leaf, one per label and inputs: the inputs
        come from the walk's caches, so equal ones are the same objects (see ``share``)."""
        key = (label, tuple(map(id, inputs)))
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = (ir.Automaton(build(), label), inputs)  # inputs kept alive
        return found[0]

    def other_keys(self, keys: list[str]) -> ir.Automaton:
        """Canonical quoted strings other than ``keys``, as a leaf: every canonical string minus the
        keys' (a string has one canonical form, so the difference of the forms is the form of the
        difference)."""
        any_key = quoted_string_dfa(self.limits)
        if not keys:
            return self.derived("other keys", (any_key,), lambda: any_key)
        declared = self.dfa(ir.alt(*map(_key_literal, keys)))
        return self.derived(
            "other keys", (any_key, declared), lambda: difference(any_key, declared, self.limits)
        )

    def refuse(self, keyword: str, reason: str, where: str) -> None:
        """Strict: raise. Lenient: record a warning; the caller drops the keyword."""
        if not self.lenient:
            raise UnsupportedError(f"keyword {keyword!r}", reason, where=where)
        self.drop(f"ignored keyword {keyword!r} at {where}: {reason}")

    def drop(self, warning: str) -> None:
        """Record a validation keyword dropped under lenient, and how that moves the language: wider
        where the schema's own language is built, narrower inside a complement."""
        self.warnings[warning] = None
        if self.polarity >= 0:
            self.effects["wider"] = None
        if self.polarity <= 0:
            self.effects["narrower"] = None

    def unknown_keyword(self, keyword: str, where: str) -> None:
        """A keyword of no vocabulary we know: an annotation, warned once per place (an error under
        ``refuse_unknown``)."""
        warning = unknown_keyword_warning(keyword, where)
        if self.refuse_unknown:
            raise UnsupportedError(
                f"keyword {keyword!r}", warning.split(": ", 1)[1] + " (--refuse-unknown)", where=where
            )
        self.warnings[warning] = None

    def unknown_format(self, name: str, where: str) -> None:
        """A ``format`` no JSON Schema draft defines: an annotation, like an unknown keyword."""
        warning = unknown_format_warning(name, where)
        if self.refuse_unknown:
            raise UnsupportedError(
                f"format {name!r}", warning.split(": ", 1)[1] + " (--refuse-unknown)", where=where
            )
        self.warnings[warning] = None

    def openapi_keyword(self, keyword: str, where: str, meaning: str) -> None:
        warning = f"OpenAPI keyword {keyword!r} at {where}: {meaning}"
        self.warnings[warning] = None

    @contextmanager
    def signed(self, sign: int) -> Iterator[None]:
        """Walk a part whose language enters the result with ``sign`` (-1: complemented, 0: both)."""
        saved = self.polarity
        self.polarity = saved * sign
        try:
            yield
        finally:
            self.polarity = saved

    def length_fits(self, keyword: str, count: int, where: str) -> bool:
        """Whether a string length bound fits the state bound: ``count`` characters need one
        state per count for each state inside a character, all distinct in the minimal DFA of
        any schema that reaches the string (its closing quote ends it), so past the bound the
        compile would fail anyway, only after building most of the automaton. Strict: a
        ``LimitError`` naming the keyword. Lenient: a warning; the caller drops the keyword."""
        per_character = string_char_automaton().dfa.num_states - 2  # not the dead state nor the end
        needed = per_character * count + 1
        if needed <= self.limits.max_states:
            self.string_costs[f"{keyword} {count} at {pointer_child(where, keyword)}"] = needed
            return True
        need = f"{keyword} {count} needs at least {needed} automaton states ({per_character} per character)"
        if not self.lenient:
            raise LimitError(
                "max_states",
                self.limits.max_states,
                f"{need}, at {pointer_child(where, keyword)}",
                flag="--max-states",
            )
        self.drop(
            f"ignored keyword {keyword!r} at {where}: {need}, more than max_states "
            f"{self.limits.max_states} (raise it with --max-states)"
        )
        return False

    def attempt(self, keyword: str, where: str, build: Callable[[], ir.Node]) -> ir.Node | None:
        """Run a keyword's builder; under lenient, a keyword that cannot be compiled is dropped."""
        try:
            return build()
        except (UnsupportedError, SourceError) as error:
            if isinstance(error, UnsupportedError) and error.where:
                reason = str(error)
            else:
                reason = error.message if isinstance(error, SourceError) else str(error)
            self.refuse(keyword, reason, where)
            return None

    @contextmanager
    def deeper(self) -> Iterator[None]:
        self.nesting += 1
        try:
            yield
        finally:
            self.nesting -= 1

    # ------------------------------------------------------------------ entry

    def node(self, schema: Any, where: str) -> ir.Node:
        """The language of ``schema`` at ``where``; nested calls count against ``max_nesting``."""
        self.walk_depth += 1
        try:
            if self.walk_depth > self.limits.max_nesting:
                raise LimitError(
                    "max_nesting",
                    self.limits.max_nesting,
                    f"the schema nests subschemas (and $ref targets) more than {self.limits.max_nesting} "
                    f"levels deep, at {where}",
                    "--max-nesting",
                )
            return self.node_at(schema, where)
        finally:
            self.walk_depth -= 1

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
            self.note_policy(schema, where)
            return self.enumerated(schema, where)
        clean = self.clean(schema, where)
        if "$ref" in clean:
            if self.old_draft or len(clean) == 1:
                return self.reference(clean["$ref"], where)
            rest = {k: v for k, v in clean.items() if k != "$ref"}
            return self.all_of([{"$ref": clean["$ref"]}, rest], where, [where, where])
        if "allOf" in clean:
            rest = {k: v for k, v in clean.items() if k != "allOf"}
            branches = clean["allOf"]
            wheres = [where, *(pointer_child(where, "allOf", i) for i in range(len(branches)))]
            return self.all_of([rest, *branches], where, wheres)
        return self.combined(clean, where)

    def note_policy(self, schema: dict[str, Any], where: str) -> None:
        """The policy's warnings for the keywords of a schema that jsonschema decides (an enum or a
        const filtered by the whole schema): unknown and OpenAPI keywords; the others are exact."""
        for key, value in schema.items():
            if is_disabled_keyword(key):
                continue
            if key in OPENAPI or key in OPENAPI_READ_WRITE:
                self.policy_keyword(key, value, where)
            elif not is_known(key):
                self.unknown_keyword(key, where)

    def policy_keyword(self, key: str, value: Any, where: str) -> None:
        """Warn of an OpenAPI keyword (``nullable: false`` and JSON Schema's readOnly / writeOnly,
        outside an OpenAPI document, are silent)."""
        if key == "nullable" and value is not True:
            return
        if key in OPENAPI_READ_WRITE:
            if self.openapi_document and value is True:
                self.openapi_keyword(key, where, OPENAPI_READ_WRITE[key])
            return
        self.openapi_keyword(key, where, OPENAPI[key])

    def clean(self, schema: dict[str, Any], where: str) -> dict[str, Any]:
        """The schema without annotations (unknown and OpenAPI keywords warned) and, under lenient,
        without refused keywords."""
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in OPENAPI or key in OPENAPI_READ_WRITE:
                self.policy_keyword(key, value, where)
                continue
            if is_annotation(key):
                continue
            if key in REFUSED:
                self.refuse(key, REFUSED[key], where)
                continue
            if key not in COMPILED and is_disabled_keyword(key):
                self.warnings[
                    f"disabled keyword {key!r} at {where}: {key[1:]!r} switched off by its underscore, "
                    "no effect (as in JSON Schema)"
                ] = None
                continue
            if key not in COMPILED:
                # JSON Schema: keywords an implementation does not know are annotations.
                self.unknown_keyword(key, where)
                continue
            if key in ("then", "else") and "if" not in schema:
                continue
            if (key == "dependencies" and self.new_draft) or (key in _LATER_DRAFTS_ONLY and self.old_draft):
                self.refuse(key, "not a keyword of the draft that $schema declares", where)
                continue
            out[key] = value
        return out

    def plain_ref(self, schema: Any, where: str) -> Any:
        """The ``$ref`` of a schema that is nothing but a reference (as ``node`` reads it: no
        enum or const, and no other keyword that counts), else None."""
        if not isinstance(schema, dict) or "$ref" not in schema or "enum" in schema or "const" in schema:
            return None
        clean = self.clean(schema, where)
        if "$ref" in clean and (self.old_draft or len(clean) == 1):
            return clean["$ref"]
        return None

    def reference(self, ref: Any, where: str) -> ir.Node:
        """The target of ``ref``. A chain of schemas that are nothing but references is followed
        in a loop (each link on the ref stack, as if walked one by one), not by recursion."""
        chain: list[str] = []
        try:
            while True:
                if not isinstance(ref, str):
                    raise UnsupportedError(f"$ref {ref!r}", "must be a string", where=where)
                target_pointer, target = self.resolver.resolve(ref, where)
                if self.ref_stack.count(target_pointer) >= self.limits.max_depth:
                    self.refs_cut[target_pointer] = None
                    self.flags.ref_cut = True
                    return ir.NOTHING
                next_ref = self.plain_ref(target, target_pointer)
                if next_ref is None:
                    return self.reference_target(target_pointer, target)
                self.ref_stack.append(target_pointer)
                chain.append(target_pointer)
                ref, where = next_ref, target_pointer
        finally:
            if chain:
                del self.ref_stack[len(self.ref_stack) - len(chain) :]

    def reference_target(self, target_pointer: str, target: Any) -> ir.Node:
        """The walk of a $ref target that is more than a reference, cached by context."""
        # The walk below depends on the context only through how often each pointer is on the ref
        # stack (the recursion cut) and the depth budget left (complements): equal contexts give
        # the same node, and the same flags, warnings and cuts, which a cache hit replays.
        budget = None if self.budget_end is None else self.budget_end - self.nesting
        key = (target_pointer, budget, self.polarity, tuple(sorted(Counter(self.ref_stack).items())))
        cached = self._refs.get(key)
        if cached is None:
            cached = self._refs[key] = self.reference_walk(target_pointer, target)
        self.flags.ordered |= cached.flags.ordered
        self.flags.ref_cut |= cached.flags.ref_cut
        self.flags.depth_cut |= cached.flags.depth_cut
        self.warnings.update(dict.fromkeys(cached.warnings))
        self.refs_cut.update(dict.fromkeys(cached.refs_cut))
        self.effects.update(dict.fromkeys(cached.effects))
        return cached.node

    def reference_walk(self, target_pointer: str, target: Any) -> _RefResult:
        """Walk a $ref target, recording the flags, warnings and cuts it causes."""
        saved_flags = self.flags
        warnings_before, cuts_before = len(self.warnings), len(self.refs_cut)
        saved_effects, self.effects = self.effects, {}
        self.flags = _Flags()
        self.ref_stack.append(target_pointer)
        try:
            node = self.node(target, target_pointer)
            flags = self.flags
        finally:
            self.ref_stack.pop()
            inner, self.flags = self.flags, saved_flags
            self.flags.ordered |= inner.ordered
            self.flags.ref_cut |= inner.ref_cut
            self.flags.depth_cut |= inner.depth_cut
            inner_effects, self.effects = self.effects, saved_effects
            self.effects.update(inner_effects)
        return _RefResult(
            node,
            flags,
            tuple(itertools.islice(self.warnings, warnings_before, None)),
            tuple(itertools.islice(self.refs_cut, cuts_before, None)),
            tuple(inner_effects),
        )

    # ------------------------------------------------------------------ enum / const

    def enumerated(self, schema: dict[str, Any], where: str) -> ir.Node:
        """Candidates from enum/const, each kept only if the whole schema accepts it (jsonschema)."""
        if "const" in schema:
            candidates = [schema["const"]]
        elif isinstance(schema["enum"], list):
            candidates = schema["enum"]
        else:
            raise UnsupportedError("keyword 'enum'", "must be an array", where=where)
        by_type = _filter_by_type_alone(schema, candidates)
        if by_type is not None:
            return ir.alt(*(self.constant(value, where) for value in by_type))
        checker = self.validator.evolve(schema=schema)
        kept: list[ir.Node] = []
        for value in candidates:
            try:
                valid = checker.is_valid(value)
            except Exception as error:  # a remote or broken $ref inside the schema
                raise UnsupportedError(
                    "keyword 'enum'", f"cannot check candidates: {error}", where=where
                ) from error
            if valid:
                kept.append(self.constant(value, where))
        return ir.alt(*kept)

    def constant(self, value: Any, where: str) -> ir.Node:
        layout = self.layout
        if isinstance(value, dict):
            if len(value) >= 2:
                self.flags.ordered = True
            members = [
                layout.member(ir.text(canonical.serialize(str(k))), self.constant(v, where))
                for k, v in value.items()
            ]
            if not members:
                return (
                    ir.literal(b"{}")
                    if layout.policy == "compact"
                    else layout.wrap(b"{", ir.NOTHING, b"}", True)
                )
            return layout.wrap(b"{", ir.seq(*_joined(members, layout.comma)), b"}", False)
        if isinstance(value, list):
            items = [self.constant(v, where) for v in value]
            if not items:
                return layout.wrap(b"[", ir.NOTHING, b"]", True)
            return layout.wrap(b"[", ir.seq(*_joined(items, layout.comma)), b"]", False)
        return ir.text(canonical.serialize(value))

    # ------------------------------------------------------------------ combinators

    def flatten(
        self, schemas: list[Any], where: str, pushed: list[str], wheres: list[str] | None = None
    ) -> list[Any] | None:
        """allOf branches with top-level refs resolved and nested allOf spread out (None: a ref cut).
        ``wheres``: where each schema stands in the document, when they are not ``where``'s allOf
        (a schema split into its own keywords and its allOf, say): $ref resolution needs the base
        URI in scope there, and errors name the place."""
        out: list[Any] = []
        for i, schema in enumerate(schemas):
            branch_where = wheres[i] if wheres is not None else pointer_child(where, "allOf", i)
            while (
                isinstance(schema, dict) and "$ref" in schema and not ("enum" in schema or "const" in schema)
            ):
                clean = self.clean(schema, branch_where)
                if "$ref" not in clean:
                    schema = clean
                    break
                siblings = {} if self.old_draft else {k: v for k, v in clean.items() if k != "$ref"}
                if siblings:
                    out.extend(self.flatten([siblings], branch_where, pushed, [branch_where]) or [False])
                target_pointer, schema = self.resolver.resolve(clean["$ref"], branch_where)
                if (self.ref_stack + pushed).count(target_pointer) >= self.limits.max_depth:
                    self.refs_cut[target_pointer] = None
                    self.flags.ref_cut = True
                    return None
                pushed.append(target_pointer)
                branch_where = target_pointer
            if not isinstance(schema, (dict, bool)):
                raise UnsupportedError(
                    f"schema {schema!r}", "a schema must be an object or a boolean", where=branch_where
                )
            if isinstance(schema, dict) and not ("enum" in schema or "const" in schema):
                schema = self.clean(schema, branch_where)
                if "allOf" in schema:
                    inner = self.flatten(schema["allOf"], branch_where, pushed)
                    if inner is None:
                        return None
                    out.extend(inner)
                    schema = {k: v for k, v in schema.items() if k != "allOf"}
            out.append(schema)
        return out

    def all_of(self, schemas: list[Any], where: str, wheres: list[str] | None = None) -> ir.Node:
        pushed: list[str] = []
        branches = self.flatten(schemas, where, pushed, wheres)
        if branches is None:
            return ir.NOTHING
        merged: Any = True
        residue: list[Any] = []
        for branch in branches:
            if isinstance(branch, dict) and ("enum" in branch or "const" in branch):
                residue.append(branch)
                continue
            merged, rest = merge(merged, branch)
            residue.extend(rest)
        self.ref_stack.extend(pushed)
        try:
            if merged is False:
                return ir.NOTHING
            if (
                residue
                and merged is not True
                and any(isinstance(r, dict) and ("enum" in r or "const" in r) for r in residue)
            ):
                # A finite candidate set: filter it by every branch at once (exact).
                candidates = next(r for r in residue if isinstance(r, dict) and ("enum" in r or "const" in r))
                others = [r for r in residue if r is not candidates]
                return self.enumerated({"allOf": [merged, *others], **candidates}, where)
            node = self.combined(merged, where) if isinstance(merged, dict) else self.universe()
            for extra in residue:
                if is_empty_node(node):
                    return ir.NOTHING
                node = ir.Automaton(
                    intersect(self.dfa(node), self.dfa(self.node(extra, where)), self.limits), "allOf"
                )
            return node
        finally:
            del self.ref_stack[len(self.ref_stack) - len(pushed) :]

    def combined(self, schema: dict[str, Any], where: str) -> ir.Node:
        """A cleaned schema with no $ref / allOf at its top: presence dependencies, anyOf, oneOf,
        not, if, then the types."""
        if any(keyword in schema for keyword in DEPENDENCY_KEYWORDS):
            return ir.alt(
                *(
                    self.all_of([branch, *(s for s, _ in extras)], where, [where, *(w for _, w in extras)])
                    if extras
                    else self.combined(branch, where)
                    for branch, extras in dependency_branches(schema, where)
                )
            )
        if "anyOf" in schema:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            branches = _as_list(schema["anyOf"], "anyOf", where)
            return ir.alt(
                *(self.with_base(rest, b, pointer_child(where, "anyOf", i)) for i, b in enumerate(branches))
            )
        if "oneOf" in schema:
            rest = {k: v for k, v in schema.items() if k != "oneOf"}
            return self.one_of(rest, _as_list(schema["oneOf"], "oneOf", where), where)
        if "if" in schema:
            rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
            return self.conditional(
                rest, schema["if"], schema.get("then", True), schema.get("else", True), where
            )
        if "not" in schema:
            rest = {k: v for k, v in schema.items() if k != "not"}
            base = self.typed(rest, where)
            if is_empty_node(base):
                return ir.NOTHING
            negated = self.complement(schema["not"], pointer_child(where, "not"), "not")
            if negated is None:
                return base
            base_dfa = self.dfa(base)
            return self.derived("not", (base_dfa, negated), lambda: intersect(base_dfa, negated, self.limits))
        return self.typed(schema, where)

    def with_base(self, base: dict[str, Any], branch: Any, where: str) -> ir.Node:
        """``branch`` (at ``where``, an anyOf / oneOf item) with the rest of its parent schema."""
        if not base:
            return self.node(branch, where)
        return self.all_of([base, branch], where, [_parent_schema(where), where])

    @contextmanager
    def bounded_subwalk(self) -> Iterator[_Flags]:
        """Walk a part that will go through a DFA product (``not``, ``if``, ``oneOf``): with fresh
        flags (handed to the block, and filled when it ends) and a depth budget when none is set
        yet; afterwards the outer flags learn what the part recorded and the budget is restored."""
        saved_flags, saved_budget = self.flags, self.budget_end
        inner = self.flags = _Flags()
        if self.budget_end is None:
            self.budget_end = self.nesting + self.limits.max_depth
        try:
            yield inner
        finally:
            self.budget_end = saved_budget
            self.flags = saved_flags
            saved_flags.ordered |= inner.ordered
            saved_flags.ref_cut |= inner.ref_cut

    def complement(self, schema: Any, where: str, keyword: str) -> DFA | None:
        """Canonical values (depth-bounded) that ``schema`` rejects; None if dropped under lenient."""
        with self.bounded_subwalk() as flags, self.signed(-1):
            operand = self.node(schema, where)
        if flags.ordered or flags.ref_cut:
            why = (
                "its objects have a fixed key order (more than one property), so the complement would "
                "accept reordered valid values"
                if flags.ordered
                else "it recurses deeper than max_depth"
            )
            self.refuse(keyword, f"cannot be complemented exactly: {why}", where)
            return None
        universe = self.universe_leaf(
            self.budget_end - self.nesting if self.budget_end is not None else self.limits.max_depth
        ).dfa
        self.flags.depth_cut = True
        operand_dfa = self.dfa(operand)
        return self.derived(
            "complement", (universe, operand_dfa), lambda: difference(universe, operand_dfa, self.limits)
        ).dfa

    def conditional(
        self, base: dict[str, Any], condition: Any, then: Any, otherwise: Any, where: str
    ) -> ir.Node:
        negated = self.complement(condition, pointer_child(where, "if"), "if")
        if negated is None:
            return self.typed(base, where)
        taken = self.all_of(
            [base, condition, then], where, [where, pointer_child(where, "if"), pointer_child(where, "then")]
        )
        not_taken = self.all_of([base, otherwise], where, [where, pointer_child(where, "else")])
        if not is_empty_node(not_taken):
            not_taken_dfa = self.dfa(not_taken)
            not_taken = self.derived(
                "else", (not_taken_dfa, negated), lambda: intersect(not_taken_dfa, negated, self.limits)
            )
        return ir.alt(taken, not_taken)

    def one_of(self, base: dict[str, Any], branches: list[Any], where: str) -> ir.Node:
        """Values valid for exactly one branch: the union where the branches are proven disjoint
        (from the schemas, else by DFA intersection), else an "exactly one" product; both need
        branch languages that hold every serialization of their values within the depth bound."""
        wheres = [pointer_child(where, "oneOf", i) for i in range(len(branches))]
        views = [self.branch_view(base, b, w) for b, w in zip(branches, wheres, strict=True)]
        proven = {
            (i, j)
            for (i, x), (j, y) in itertools.combinations(enumerate(views), 2)
            if _surely_disjoint(x, y, self)
        }
        if len(proven) == len(branches) * (len(branches) - 1) // 2:
            return ir.alt(*(self.with_base(base, b, w) for b, w in zip(branches, wheres, strict=True)))
        types = type_set(base)
        if types is None or ("object" in types and len(types) > 1):
            # Objects told apart by a discriminating property; the other types by a product.
            as_objects = [merge(v, {"type": ["object"]})[0] for v in views]
            if all(_surely_disjoint(x, y, self) for x, y in itertools.combinations(as_objects, 2)):
                object_base, _ = merge(base, {"type": ["object"]})
                others = sorted((types or {*ALL_TYPES, "integer"}) - {"object"})
                other_base, _ = merge(base, {"type": others})
                assert isinstance(object_base, dict) and isinstance(other_base, dict)
                objects = ir.alt(
                    *(self.with_base(object_base, b, w) for b, w in zip(branches, wheres, strict=True))
                )
                return ir.alt(objects, self.one_of(other_base, branches, where))
        with self.bounded_subwalk() as flags, self.signed(0):
            nodes = [self.with_base(base, b, w) for b, w in zip(branches, wheres, strict=True)]
            assert self.budget_end is not None
            depth = self.budget_end - self.nesting
        if flags.ordered or flags.ref_cut:
            self.refuse(
                "oneOf",
                "branches could not be proven disjoint, and 'exactly one' needs branches without fixed "
                "key order or recursion cut at max_depth",
                where,
            )
            return ir.alt(*nodes)
        # Within the depth bound each branch's language holds every serialization of its values, so
        # branches whose DFAs do not intersect share no value there: their union is exact.
        branch_dfas = [self.dfa(n) for n in nodes]
        if all(
            (i, j) in proven or disjoint(branch_dfas[i], branch_dfas[j], self.limits)
            for i, j in itertools.combinations(range(len(nodes)), 2)
        ):
            if not flags.depth_cut:
                return ir.alt(*nodes)
            # Constants are not cut at the bound: a deep one of one branch may be valid, deeper
            # than the bound, for another. Within the bound the union is exact.
            self.flags.depth_cut = True
            bounded = (self.universe_leaf(depth).dfa, *branch_dfas)
            return self.derived(
                "oneOf disjoint",
                bounded,
                lambda: intersect(bounded[0], _union_all(bounded[1:], self.limits), self.limits),
            )
        self.flags.depth_cut = True
        dfas = (self.universe_leaf(depth).dfa, *branch_dfas)
        return self.derived(
            "oneOf", dfas, lambda: product(list(dfas), lambda f: bool(f[0]) and sum(f[1:]) == 1, self.limits)
        )

    @contextmanager
    def probe(self) -> Iterator[None]:
        """A walk whose records are forgotten afterwards (flags, warnings, cuts, effects): a look
        at a language that decides something, whose parts the real walk meets again."""
        saved = (self.flags, dict(self.warnings), dict(self.refs_cut), dict(self.effects))
        self.flags = _Flags()
        try:
            yield
        finally:
            self.flags = saved[0]
            self.warnings, self.refs_cut, self.effects = saved[1], saved[2], saved[3]

    def proven_disjoint(self, a: Any, b: Any, where: str) -> bool:
        """Whether no value is valid for both schemas, by the emptiness of the intersection of their
        DFAs: only where both languages hold every serialization of their values at any depth (no
        fixed key order, nothing cut at a bound); False when that is not so or a walk fails."""
        if self.resolver.has_embedded_resources:
            return False  # the schemas come from views whose $ref base may not be ``where``'s
        try:
            with self.probe():
                languages = []
                for schema in (a, b):
                    with self.bounded_subwalk() as flags:
                        node = self.node(schema, where)
                    if flags.ordered or flags.ref_cut or flags.depth_cut:
                        return False
                    languages.append(self.dfa(node))
                return disjoint(languages[0], languages[1], self.limits)
        except MoonmaskError:
            return False

    def branch_view(self, base: dict[str, Any], branch: Any, where: str) -> Any:
        """The merged schema of a branch, for disjointness proofs (refs resolved one level)."""
        try:
            flat = self.flatten([base, branch], where, [], [_parent_schema(where), where])
        except UnsupportedError:
            return True
        if flat is None:
            return True
        view: Any = True
        for part in flat:
            if isinstance(part, dict) and ("enum" in part or "const" in part):
                view = part if view is True else view
                continue
            view, _ = merge(view, part)
        return view

    # ------------------------------------------------------------------ types

    def typed(self, schema: dict[str, Any], where: str) -> ir.Node:
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
            parts.append(self.numeric(schema, "number" in types, where))
        if "string" in types:
            parts.append(self.string(schema, where))
        if "array" in types:
            parts.append(self.array(schema, where))
        if "object" in types:
            parts.append(self.object(schema, where))
        return ir.alt(*parts)

    def numeric(self, schema: dict[str, Any], fractions: bool, where: str) -> ir.Node:
        from moonmaskc.frontends.schema.numbers import integer_node, number_node

        build = number_node if fractions else integer_node
        keywords = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
        args = {k: schema.get(k) for k in keywords}
        # Equal keywords give the same automaton (a $ref'd number used in two places, say): built once.
        # 1 and 1.0 and True are equal keys but may be told apart by the builder, so types are kept.
        key = (fractions, *((value, type(value)) for value in args.values()))
        found = self._numbers.get(key)
        if found is not None:
            return found
        node = self.attempt(
            "number bounds",
            where,
            lambda: build(
                minimum=args["minimum"],
                maximum=args["maximum"],
                exclusive_minimum=args["exclusiveMinimum"],
                exclusive_maximum=args["exclusiveMaximum"],
                multiple_of=args["multipleOf"],
                limits=self.limits,
                where=where,
            ),
        )
        if node is None:  # refused under lenient: not kept, so that every place warns
            return build(limits=self.limits)
        self._numbers[key] = node
        return node

    def string(self, schema: dict[str, Any], where: str) -> ir.Node:
        least = _count(schema, "minLength", where) or 0
        most = _count(schema, "maxLength", where)
        if most is not None and most < least:
            return ir.NOTHING
        if "pattern" not in schema and "format" not in schema:  # those may bound the length lower
            if most is not None and not self.length_fits("maxLength", most, where):
                most = None
            if least and not self.length_fits("minLength", least, where):
                least = 0
        body = ir.repeat(string_char_automaton(), least, most)
        if least == 0 and most is None:
            body = canonical.STRING_BODY
        constraints: list[DFA] = []
        within_body = False  # whether constraints[0] is already inside the canonical STRING_BODY
        if "format" in schema:
            from moonmaskc.frontends.schema.formats import FORMATS, format_node, format_string_dfa

            name = str(schema["format"])
            format_where = pointer_child(where, "format")
            if name in FORMATS or name in SPEC_FORMATS:
                known = self.attempt("format", format_where, lambda: format_node(name, where))
            else:
                self.unknown_format(name, format_where)
                known = None
            if known is not None:
                constraints.append(format_string_dfa(name, self.limits))
                within_body = True
        if "pattern" in schema:
            pattern = schema["pattern"]
            node = self.attempt(
                "pattern", pointer_child(where, "pattern"), lambda: _pattern_node(pattern, self.limits)
            )
            if node is not None:
                constraints.append(self.dfa(node))
        if not constraints:
            return canonical.quoted(body)
        if within_body and body is canonical.STRING_BODY:
            inputs = tuple(constraints)
        else:
            inputs = (self.dfa(body), *constraints)

        def language() -> DFA:
            result = inputs[0]
            for constraint in inputs[1:]:
                result = intersect(result, constraint, self.limits)
            return result

        return canonical.quoted(self.derived("string", inputs, language))

    def array(self, schema: dict[str, Any], where: str) -> ir.Node:
        items = schema.get("items")
        if isinstance(items, list):
            prefix_schemas, rest_schema, prefix_key = items, schema.get("additionalItems", True), "items"
            rest_where = pointer_child(where, "additionalItems")
        else:
            prefix_schemas = _as_list(schema.get("prefixItems", []), "prefixItems", where)
            rest_schema, prefix_key = (True if items is None else items), "prefixItems"
            rest_where = pointer_child(where, "items")
        least = _count(schema, "minItems", where) or 0
        most = _count(schema, "maxItems", where)
        if most is not None and most < least:
            return ir.NOTHING
        with self.deeper():
            if self.budget_end is not None and self.nesting > self.budget_end:
                self.flags.depth_cut = True
                return ir.NOTHING
            prefix = []
            for i, p in enumerate(prefix_schemas):
                if most is not None and i >= most:
                    break
                prefix.append(self.share(self.node(p, pointer_child(where, prefix_key, i))))
            rest = None
            if rest_schema is not False and (most is None or most > len(prefix_schemas)):
                rest = self.share(self.node(rest_schema, rest_where))
                if is_empty_node(rest):
                    rest = None
            rule = self.contains_rule(schema, where) if "contains" in schema else None
        content, may_be_empty = positional_elements(prefix, rest, self.layout.comma, least, most)
        plain = self.layout.wrap(b"[", content, b"]", may_be_empty)
        elements = [node for node in (*prefix, rest) if node is not None]
        if rule is not None:
            plain = self.containing(plain, elements, rule)
        if schema.get("uniqueItems") is True and not _at_most_one_item(schema) and elements:
            return self.unique(plain, elements, most, where)
        return plain

    def unique(self, plain: ir.Node, elements: list[ir.Node], most: int | None, where: str) -> ir.Node:
        """``plain``'s arrays whose elements are distinct values (``unique_items.py``): exact where
        the elements' language is finite and small, else refused naming why (dropped under
        lenient)."""
        from moonmaskc.frontends.schema.unique_items import (
            NotSmall,
            distinct_sequences,
            element_values,
            seen_sets,
        )

        try:
            values = element_values(self.dfa(ir.alt(*elements)))
        except NotSmall as why:
            self.refuse("uniqueItems", f"compiled only over a finite, small set of item values: {why}", where)
            return plain
        sets = seen_sets(len(values), most)
        if sets > self.limits.max_states:
            message = (
                f"{len(values)} distinct item values make {sets} sets of values seen, more than "
                f"max_states {self.limits.max_states} (raise it with --max-states, or bound maxItems)"
            )
            self.refuse("uniqueItems", message, where)
            return plain
        if len(values) < 2:
            return plain
        content = distinct_sequences(values, self.layout.comma, most, self.share)
        distinct = self.layout.wrap(b"[", content, b"]", True)
        pair = (self.dfa(plain), self.dfa(distinct))
        return self.derived("uniqueItems", pair, lambda: intersect(*pair, self.limits))

    def contains_rule(self, schema: dict[str, Any], where: str) -> tuple[ir.Node | None, int, int | None]:
        """What ``contains`` asks of the elements: the language of the matching ones (None: every
        element matches), minContains (default 1) and maxContains. An upper bound counts the
        elements that do not match, a complement within the array's elements, so like ``not`` it
        is refused (dropped under lenient) where the contains schema has objects of fixed key order
        or was cut by max_depth: a matching element outside the compiled language would go
        uncounted."""
        target, target_where = schema["contains"], pointer_child(where, "contains")
        least = _count(schema, "minContains", where)
        least = 1 if least is None else least
        most = _count(schema, "maxContains", where)
        if target is True or target == {}:
            return None, least, most
        if most is None:
            return self.share(self.node(target, target_where)), least, None
        with self.bounded_subwalk() as flags, self.signed(0):
            wanted = self.share(self.node(target, target_where))
        if flags.ordered or flags.ref_cut or flags.depth_cut:
            why = "objects of a fixed key order" if flags.ordered else "parts cut by max_depth"
            self.refuse("maxContains", f"cannot count the other elements exactly: contains has {why}", where)
            most = None
        return wanted, least, most

    def containing(
        self, plain: ir.Node, elements: list[ir.Node], rule: tuple[ir.Node | None, int, int | None]
    ) -> ir.Node:
        """The arrays of ``plain`` (whose elements are among ``elements``) in which the number of
        elements valid for ``contains`` is within the bounds of ``rule`` (``contains_rule``):
        ``plain`` intersected with element sequences that count them (``contains.py``)."""
        wanted, least, most = rule
        if least == 0 and most is None:
            return plain
        if not elements:  # only the empty array: no element matches
            return plain if least == 0 else ir.NOTHING
        any_element = ir.alt(*elements)
        matching: ir.Node = any_element
        other: ir.Node = ir.NOTHING
        if wanted is not None:
            pair = (self.dfa(any_element), self.dfa(wanted))
            matching = self.derived("contained", pair, lambda: intersect(*pair, self.limits))
            other = any_element  # enough for a lower bound: the matches among any elements
            if most is not None:
                other = self.derived("not contained", pair, lambda: difference(*pair, self.limits))
        content, may_be_empty = counted_elements(matching, other, self.layout.comma, least, most)
        counted = (self.dfa(plain), self.dfa(self.layout.wrap(b"[", content, b"]", may_be_empty)))
        return self.derived("contains", counted, lambda: intersect(*counted, self.limits))

    def object(self, schema: dict[str, Any], where: str) -> ir.Node:
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise UnsupportedError("keyword 'properties'", "must be an object", where=where)
        required = list(dict.fromkeys(_as_list(schema.get("required", []), "required", where)))
        extra_schema = schema.get("additionalProperties", True)
        least = _count(schema, "minProperties", where) or 0
        most = _count(schema, "maxProperties", where)
        keys = [*properties, *(k for k in required if k not in properties)]
        members: list[Member] = []
        with self.deeper():
            if self.budget_end is not None and self.nesting > self.budget_end:
                self.flags.depth_cut = True
                return ir.NOTHING
            patterns = self.property_patterns(schema, where)
            names = self.property_names(schema, where)
            for key in keys:
                quoted_key = canonical.serialize(key).encode("utf-8")
                is_required = key in required
                if names is not None and not names.accepts(quoted_key):
                    if is_required:
                        return ir.NOTHING
                    continue
                matched = matching_patterns(quoted_key, [pattern.keys for pattern in patterns])
                schemas = [patterns[i].value for i in matched]
                if key in properties:
                    schemas.insert(0, (properties[key], pointer_child(where, "properties", key)))
                if not schemas:
                    schemas = [(extra_schema, pointer_child(where, "additionalProperties"))]
                value = self.share(self.every_schema(schemas))
                if is_empty_node(value):
                    if is_required:
                        return ir.NOTHING
                    continue
                members.append(Member(self.layout.member(_key_literal(key), value), is_required))
            extra = self.extra_members(keys, patterns, names, extra_schema, where)
        if (
            self.budget_end is not None
            and len(members) == 1
            and extra is not None
            and least == 0
            and most is None
        ):
            # Inside a complement: one declared key may stand anywhere among the extra keys, so the
            # language holds every key order and the complement stays exact.
            comma = self.layout.comma
            extras = ir.seq(extra, ir.star(ir.seq(comma, extra)))
            only = members[0]
            around = ir.seq(ir.optional(ir.seq(extras, comma)), only.node, ir.optional(ir.seq(comma, extras)))
            content = around if only.required else ir.alt(around, extras)
            return self.layout.wrap(b"{", content, b"}", not only.required)
        possible = None if extra is not None else len(members)
        if members and (possible is None or possible >= 2) and (most is None or most >= 2):
            self.flags.ordered = True
        content, may_be_empty = ordered_members(members, extra, self.layout.comma, least, most, self.share)
        return self.layout.wrap(b"{", content, b"}", may_be_empty)

    def every_schema(self, schemas: list[tuple[Any, str]]) -> ir.Node:
        """The values valid for all of ``schemas`` (each with its pointer)."""
        if len(schemas) == 1:
            return self.node(*schemas[0])
        return self.all_of([s for s, _ in schemas], schemas[0][1], [w for _, w in schemas])

    def property_patterns(self, schema: dict[str, Any], where: str) -> list[_PropertyPattern]:
        """The patterns of ``patternProperties`` with the quoted canonical keys each matches (a
        pattern that cannot be compiled is refused; under lenient it is dropped with a warning)."""
        declared = schema.get("patternProperties", {})
        if not isinstance(declared, dict):
            raise UnsupportedError("keyword 'patternProperties'", "must be an object", where=where)
        found: list[_PropertyPattern] = []
        for pattern, value_schema in declared.items():
            pattern_where = pointer_child(where, "patternProperties", pattern)
            keys = self.pattern_keys(pattern, pattern_where)
            if keys is not None:
                found.append(_PropertyPattern((value_schema, pattern_where), keys))
        return found

    def pattern_keys(self, pattern: Any, where: str) -> DFA | None:
        """The quoted canonical keys that ``pattern`` matches (None: refused under lenient)."""
        node = self.attempt("patternProperties", where, lambda: _pattern_node(pattern, self.limits))
        if node is None:
            return None
        any_key, matches = quoted_string_dfa(self.limits), self.dfa(canonical.quoted(node))
        return self.derived("keys", (any_key, matches), lambda: intersect(any_key, matches, self.limits)).dfa

    def property_names(self, schema: dict[str, Any], where: str) -> DFA | None:
        """The quoted canonical keys that ``propertyNames`` allows (None without the keyword)."""
        if "propertyNames" not in schema:
            return None
        names_where = pointer_child(where, "propertyNames")
        node = self.all_of([{"type": "string"}, schema["propertyNames"]], names_where, [names_where] * 2)
        return self.dfa(node)

    def extra_members(
        self,
        keys: list[str],
        patterns: list[_PropertyPattern],
        names: DFA | None,
        extra_schema: Any,
        where: str,
    ) -> ir.Node | None:
        """The language of one member whose key is not declared: its key is any canonical string
        but the declared keys (and allowed by ``propertyNames``), its value valid for the schema
        of every pattern that matches the key, or for ``additionalProperties`` where none does."""
        if extra_schema is False and not patterns:
            return None  # no undeclared key may appear
        extra_where = pointer_child(where, "additionalProperties")
        undeclared = self.other_keys(keys)
        if names is not None:
            named = (undeclared.dfa, names)
            undeclared = self.derived("named keys", named, lambda: intersect(*named, self.limits))
        parts: list[ir.Node] = []
        for indexes, region in self.key_regions(undeclared, [p.keys for p in patterns], where):
            if not indexes and extra_schema is False:
                continue
            schemas = [patterns[i].value for i in indexes] or [(extra_schema, extra_where)]
            value = self.share(self.every_schema(schemas))
            if not is_empty_node(value):
                parts.append(self.layout.member(region, value))
        return ir.alt(*parts) if parts else None

    def key_regions(
        self, undeclared: ir.Automaton, patterns: list[DFA], where: str
    ) -> list[tuple[tuple[int, ...], ir.Automaton]]:
        """``property_keys.key_regions`` as leaves, once per inputs (see ``derived``): an object
        schema reached from several places gives the same automata, so its IR is shared. Without
        patterns the one region is ``undeclared`` itself."""
        if not patterns:
            return [((), undeclared)]
        inputs = (undeclared.dfa, *patterns)
        key = tuple(map(id, inputs))
        found = self._regions.get(key)
        if found is None:
            regions = [
                (indexes, ir.Automaton(region, f"keys of patternProperties {list(indexes)}"))
                for indexes, region in key_regions(undeclared.dfa, patterns, self.limits, where)
            ]
            found = self._regions[key] = (regions, inputs)  # inputs kept alive
        return found[0]

    # ------------------------------------------------------------------ universe

    def universe(self) -> ir.Node:
        depth = self.limits.max_depth if self.budget_end is None else self.budget_end - self.nesting
        self.flags.depth_cut = True
        if depth < 0:
            return ir.NOTHING
        return self.universe_leaf(depth)

    def universe_leaf(self, depth: int) -> ir.Automaton:
        """The any-JSON-value automaton of ``depth`` as a leaf, the same object every time (see
        ``share``)."""
        key = (self.layout.policy, depth, self.limits)
        if key not in _UNIVERSE_CACHE:
            dfa = self.dfa(self.universe_node(depth))
            _UNIVERSE_CACHE[key] = ir.Automaton(dfa, f"any JSON value, depth <= {depth}")
        return _UNIVERSE_CACHE[key]

    def universe_node(self, depth: int) -> ir.Node:
        if depth in self._universes:
            return self._universes[depth]
        if depth < 0:
            return ir.NOTHING
        layout = self.layout
        scalars = ir.alt(
            ir.literal(b"null"),
            ir.literal(b"true"),
            ir.literal(b"false"),
            canonical.CANONICAL_NUMBER,
            canonical.quoted(canonical.STRING_BODY),
        )
        if depth == 0:
            node = scalars
        else:
            inner = self.universe_leaf(depth - 1)
            elements = ir.seq(inner, ir.star(ir.seq(layout.comma, inner)))
            member = layout.member(canonical.quoted(canonical.STRING_BODY), inner)
            members = ir.seq(member, ir.star(ir.seq(layout.comma, member)))
            node = ir.alt(
                scalars, layout.wrap(b"[", elements, b"]", True), layout.wrap(b"{", members, b"}", True)
            )
        self._universes[depth] = node
        return node


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _PropertyPattern:
    """One pattern of ``patternProperties``: its value schema with its pointer, and the quoted
    canonical keys it matches."""

    value: tuple[Any, str]
    keys: DFA


def is_empty_node(node: ir.Node) -> bool:
    if isinstance(node, ir.Automaton):
        return is_empty(node.dfa)
    return node == ir.NOTHING


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
}


def _filter_by_type_alone(schema: dict[str, Any], candidates: list[Any]) -> list[Any] | None:
    """The candidates of an enum or const that the schema accepts, when the schema says nothing else
    about them than ``type`` (and annotations); None when it does, or for a float under "integer"
    (whose meaning depends on the draft): then jsonschema decides."""
    if "enum" in schema and "const" in schema:
        return None
    if any(k not in ("enum", "const", "type") and not is_annotation(k) for k in schema):
        return None
    if "type" not in schema:
        return list(candidates)
    declared = schema["type"]
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _JSON_TYPES for n in names):
        return None
    if "integer" in names and "number" not in names and any(isinstance(v, float) for v in candidates):
        return None
    return [v for v in candidates if any(_JSON_TYPES[n](v) for n in names)]


def _joined(items: list[ir.Node], sep: ir.Node) -> list[ir.Node]:
    out: list[ir.Node] = []
    for i, item in enumerate(items):
        if i:
            out.append(sep)
        out.append(item)
    return out


def _as_list(value: Any, keyword: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise UnsupportedError(f"keyword {keyword!r}", "must be an array", where=where)
    return value


def _count(schema: dict[str, Any], keyword: str, where: str) -> int | None:
    value = schema.get(keyword)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnsupportedError(f"keyword {keyword!r}", "must be a non-negative integer", where=where)
    return value


def _at_most_one_item(schema: dict[str, Any]) -> bool:
    most = schema.get("maxItems")
    return isinstance(most, int) and not isinstance(most, bool) and most <= 1


@cache
def string_char_automaton() -> ir.Automaton:
    """One canonical string character as its minimal DFA (16 states, against about 200 NFA states
    for the expression, whose escapes are spelled out): ``maxLength: n`` copies it n times."""
    return ir.Automaton(compile_ir(canonical.STRING_CHAR), "string character")


@cache
def quoted_string_dfa(limits: Limits) -> DFA:
    """Every canonical JSON string, quotes included: a constant, built once per process and limits."""
    return compile_ir(canonical.quoted(canonical.STRING_BODY), limits)


def _key_literal(key: str) -> ir.Node:
    return ir.text(canonical.serialize(key))


def _pattern_node(pattern: Any, limits: Limits) -> ir.Node:
    from moonmaskc.frontends.regex import parse_search

    if not isinstance(pattern, str):
        raise UnsupportedError("pattern", "must be a string")
    decoded = parse_search(pattern, limits, flavor="ecma")
    return canonical.escape_node(decoded)


def _enum_values(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _surely_disjoint(a: Any, b: Any, walk: _Walk, depth: int = 0) -> bool:
    """A proof from the schemas alone that no value is valid for both (False: no proof)."""
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or depth > 3:
        return False
    for x, y in ((a, b), (b, a)):
        values = _enum_values(x)
        if values is not None:
            try:
                checker = walk.validator.evolve(schema=y)
                if not any(checker.is_valid(v) for v in values):
                    return True
            except Exception:
                pass
    types_a, types_b = type_set(a), type_set(b)
    if types_a is not None and types_b is not None:
        widen = lambda t: t | {"integer"} if "number" in t else t  # noqa: E731
        if not widen(types_a) & widen(types_b):
            return True
    # A discriminating property only separates objects: both sides must admit objects only.
    if types_a != {"object"} or types_b != {"object"}:
        return False
    props_a, props_b = a.get("properties", {}), b.get("properties", {})
    common = set(a.get("required", [])) & set(b.get("required", []))
    for key in common:
        pa = props_a.get(key) if isinstance(props_a, dict) else None
        pb = props_b.get(key) if isinstance(props_b, dict) else None
        if pa is None or pb is None:
            continue
        pa, pb = _resolved(pa, walk), _resolved(pb, walk)
        if _surely_disjoint(pa, pb, walk, depth + 1):
            return True
        if pa is not True and pb is not True and walk.proven_disjoint(pa, pb, "#"):
            return True
    return False


def _union_all(dfas: tuple[DFA, ...], limits: Limits) -> DFA:
    result = dfas[0]
    for dfa in dfas[1:]:
        result = union(result, dfa, limits)
    return result


def _parent_schema(where: str) -> str:
    """The schema holding the anyOf / oneOf item at ``where`` (``#/a/anyOf/2`` -> ``#/a``)."""
    return where.rsplit("/", 2)[0]


def _resolved(schema: Any, walk: _Walk) -> Any:
    """``schema`` with plain ``$ref`` chains followed from the root's base URI; ``True`` (no proof
    to draw) where that base may be the wrong one, in a document with embedded resources."""
    for _ in range(8):
        if (
            isinstance(schema, dict)
            and set(schema) - {"$ref"} <= {"description", "title"}
            and "$ref" in schema
        ):
            if walk.resolver.has_embedded_resources:
                return True
            try:
                _, schema = walk.resolver.resolve(schema["$ref"], "#")
            except UnsupportedError:
                return True
        else:
            break
    return schema


def compile_schema_ir(
    schema: dict[str, Any] | bool | str,
    *,
    whitespace: str = "compact",
    lenient: bool = False,
    refuse_unknown: bool = False,
    limits: Limits = Limits(),  # noqa: B008
) -> FrontendResult:
    """Compile a JSON Schema (a dict, a boolean or JSON text) into byte IR, exactly (see module doc).
    ``lenient``: drop validation keywords that cannot be compiled, with a warning each (the notes
    say whether the language got wider or narrower). ``refuse_unknown``: unknown keywords and
    format names are errors instead of annotations."""
    if isinstance(schema, str):
        schema = parse_schema_text(schema)
    layout = Layout.of(whitespace)
    walk = _Walk(schema, layout, lenient, limits, refuse_unknown)
    try:
        node = run_deep(lambda: walk.node(schema, "#"), limits)
    except RecursionError:
        # The walk counts its nesting against --max-nesting on a stack sized for it (deep.py):
        # no flag helps a walk that reaches Python's limit anyway.
        raise SourceError(
            "the schema nests too deeply for this compiler (Python's recursion limit was reached "
            f"within --max-nesting {limits.max_nesting}); simplify the nesting, and please report "
            "the schema"
        ) from None
    except UnicodeEncodeError:
        raise _lone_surrogate_error(schema) from None
    except LimitError as error:  # an automaton built during the walk (a product, say) grew too big
        raise with_costly_strings(error, _most_costly(walk.string_costs)) from None
    warnings = list(walk.warnings)
    if is_empty_node(node):
        warnings.append("the schema accepts no JSON value (within the bounds applied)")
    notes = {
        "whitespace": describe_policy(whitespace),
        "max_depth": limits.max_depth,
        "max_depth_meaning": "recursive $ref unrolled at most this many times; values accepted by {} "
        "or true nest at most this deep",
        "refs_unrolled": sorted(walk.refs_cut),
        "ignored_keywords": [w for w in walk.warnings if w.startswith("ignored keyword")],
        "unknown_keywords": [w for w in walk.warnings if w.startswith(("unknown keyword", "unknown format"))],
        "openapi_keywords": [w for w in walk.warnings if w.startswith("OpenAPI keyword")],
        "disabled_keywords": [w for w in walk.warnings if w.startswith("disabled keyword")],
        "key_order": "declared properties in schema order, then other keys",
    }
    if walk.effects:
        notes["language"] = _language_effect(walk.effects)
    costly = _most_costly(walk.string_costs)
    if costly:
        notes["string_length_states"] = costly
    return FrontendResult(node=node, notes=notes, warnings=warnings)


def _language_effect(effects: dict[str, None]) -> str:
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


def has_openapi_intent(root: Any) -> bool:
    """Whether the document carries OpenAPI intent: an ``openapi`` / ``swagger`` key at its root, or
    an OpenAPI keyword (``nullable: true``, ``discriminator``, ``xml``, ``externalDocs``,
    ``example``) in one of its schemas. Property names are not keywords: the maps of named
    subschemas are entered by their values only. Iterative."""
    if isinstance(root, dict) and ("openapi" in root or "swagger" in root):
        return True
    named = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
    stack = [root]
    while stack:
        schema = stack.pop()
        if isinstance(schema, list):
            stack.extend(schema)
            continue
        if not isinstance(schema, dict):
            continue
        for key, value in schema.items():
            if key in OPENAPI and (key != "nullable" or value is True):
                return True
            if key in named and isinstance(value, dict):
                stack.extend(value.values())
            elif key not in ("enum", "const", "default", "examples", "required") and isinstance(
                value, dict | list
            ):
                stack.append(value)
    return False


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


def _lone_surrogate_error(schema: Any) -> SourceError:
    where = (lone_surrogate_pointer(schema) or "#").encode("utf-8", "backslashreplace").decode("utf-8")
    return SourceError(
        f"the schema holds a lone surrogate (a \\uD800-\\uDFFF escape with no partner) at {where}: "
        "a constant, an enum value or a property name must be text that UTF-8 can encode; "
        "write the character itself or a valid surrogate pair"
    )


def _most_costly(string_costs: dict[str, int]) -> dict[str, int]:
    costly = sorted(string_costs.items(), key=lambda item: -item[1])
    return dict([item for item in costly if item[1] >= COSTLY_STRING_STATES][:COSTLY_STRINGS_NOTED])


def with_costly_strings(error: LimitError, costly: dict[str, int]) -> LimitError:
    """``error`` itself, or when it is the state bound and ``costly`` (length keyword and pointer
    -> states it needs) names strings, the same error listing them, most costly first: a schema's
    long strings are where its states usually go."""
    if error.bound != "max_states" or not costly:
        return error
    listed = "; ".join(f"{where} (at least {states} states)" for where, states in costly.items())
    return LimitError(
        error.bound,
        error.limit,
        f"{error.message}; the length bounds that need the most states: {listed}",
        error.flag,
    )
