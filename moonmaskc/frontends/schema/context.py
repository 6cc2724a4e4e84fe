"""The state of one schema walk, apart from its automata: where the walk is and what it recorded.

Takes: the root schema, the whitespace ``Layout``, ``lenient``, ``refuse_unknown``, ``Limits`` and
the local folders other documents are read from (``ref_roots``).
Hands on: a ``Context`` that the walk's modules read and update:
- the ``$ref`` stack, the ``$ref`` cuts (``refs_cut``) and the walked ``$ref`` targets by context;
- the soundness ``Flags`` of the part being walked (see ``compiler``'s module docstring);
- the nesting of arrays and objects and the depth budget of a part that goes through a DFA
  product (``bounded``), and the count of nested subschemas against ``--max-nesting``;
- the policy's records: ``refuse`` / ``drop`` (lenient), unknown keywords and formats, OpenAPI
  keywords, as warnings, and how dropped keywords move the language (``effects``);
- the draft the root declares, its ``RefResolver`` (which reads other documents offline) and a
  jsonschema validator of it that reads the same documents.

Two depths are in play here: ``ref_depth`` (``Limits.max_depth``: how often a ``$ref`` target may
be re-entered, and how deep values accepted by ``{}`` nest) and ``nesting`` against the budget
that a complement or product sets from it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from moonmaskc import ir
from moonmaskc.errors import LimitError, MoonmaskError, SourceError, UnsupportedError
from moonmaskc.frontends import deep
from moonmaskc.frontends.schema.dialects import declared_draft, other_draft_warning
from moonmaskc.frontends.schema.keywords import unknown_format_warning, unknown_keyword_warning
from moonmaskc.frontends.schema.layout import Layout
from moonmaskc.frontends.schema.policy import has_openapi_intent
from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, DocumentSource, RefResolver, check_keyword_shapes
from moonmaskc.limits import Limits

T = TypeVar("T")

_OLD_DRAFTS = ("draft-07", "draft-06", "draft-04", "draft-03")


@dataclass
class Flags:
    """What makes a language unfit to complement: objects of a fixed key order (``ordered``),
    recursion cut at the ``$ref`` depth (``ref_cut``), values cut at the depth budget
    (``depth_cut``)."""

    ordered: bool = False
    ref_cut: bool = False
    depth_cut: bool = False

    def absorb(self, inner: Flags) -> None:
        """Learn what a part walked with its own flags recorded."""
        self.ordered |= inner.ordered
        self.ref_cut |= inner.ref_cut
        self.depth_cut |= inner.depth_cut


@dataclass(frozen=True)
class RefRecord:
    """A $ref target walked once: its node and what the walk recorded on the way."""

    node: ir.Node
    flags: Flags
    warnings: tuple[str, ...]
    refs_cut: tuple[str, ...]
    effects: tuple[str, ...]
    bounded_cuts: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class KeyOrder:
    """One order for the keys of every object in a part (see ``key_order``): ``levels[n]`` ranks
    the keys known for objects ``n`` levels below the part, which starts at ``nesting``;
    ``serial`` tells orders apart in the walk's caches."""

    levels: dict[int, dict[str, int]]
    nesting: int
    serial: int

    def ranks(self, nesting: int) -> dict[str, int]:
        """The ranks of the keys known for objects at ``nesting``."""
        return self.levels.get(nesting - self.nesting, {})


class ScopedValidator:
    """The root's jsonschema validator, evolved for one of its subschemas so that the references in
    it resolve against the base URI of the resource it stands in: the root's, unless the document
    embeds resources or other documents were read. A subschema holding a reference that stands in
    no known place there (a view the walk built) is refused: its base is unknown."""

    def __init__(self, validator: Any, resolver: RefResolver) -> None:
        self.validator = validator
        self.resolver = resolver

    def evolve(self, schema: Any) -> Any:
        resolver = self.resolver
        if not resolver.has_embedded_resources or not _holds_reference(schema):
            return self.validator.evolve(schema=schema)
        pointer = resolver.pointer_of(schema)
        if pointer is None:
            raise UnsupportedError(
                "enum / const candidates",
                "a schema built from parts of several resources holds a $ref whose base URI is "
                "unknown, so the candidates cannot be checked",
            )
        try:
            key = pointer.partition("#")[0]
            base = resolver.base_at(pointer)
            scoped = self.validator._resolver  # jsonschema's referencing.Resolver of the root
            if key:
                scoped = scoped.lookup(key).resolver
            if base:
                scoped = scoped.lookup(base).resolver
            return self.validator.evolve(schema=schema, _resolver=scoped)
        except MoonmaskError:
            raise
        except Exception as error:
            deep.escalate_if_inline(error)
            raise UnsupportedError(
                "enum / const candidates",
                f"cannot resolve the references around them: {error}",
                where=pointer,
            ) from None


def _holds_reference(schema: Any) -> bool:
    """Whether a ``$ref`` (or a dynamic reference) stands anywhere in ``schema``."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(k in node for k in ("$ref", "$dynamicRef", "$recursiveRef")):
                return True
            stack.extend(v for k, v in node.items() if k not in DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)
    return False


@dataclass
class Context:
    root: Any
    layout: Layout
    lenient: bool
    limits: Limits
    refuse_unknown: bool = False
    # URI prefix -> local folder: where references to other documents are read (see ``refs``).
    ref_roots: Mapping[str, Any] | None = None
    warnings: dict[str, None] = field(default_factory=dict)
    # How the validation keywords dropped under lenient move the language ("wider", "narrower").
    effects: dict[str, None] = field(default_factory=dict)
    # Products (oneOf's "exactly one", the complements of not / if) taken within a depth bound.
    bounded_cuts: dict[str, None] = field(default_factory=dict)
    # +1 where the language being built is the schema's own, -1 inside a complement (a keyword
    # dropped there narrows the result), 0 where it counts both ways (an "exactly one" product).
    polarity: int = 1
    refs_cut: dict[str, None] = field(default_factory=dict)
    string_costs: dict[str, int] = field(default_factory=dict)  # length keyword -> states it needs
    ref_stack: list[str] = field(default_factory=list)
    nesting: int = 0
    walk_depth: int = 0  # nested subschemas being walked, against limits.max_nesting
    # and, in an inline attempt (``deep.run_deep``'s ``shallow``), against its levels
    inline_levels: int = field(default_factory=lambda: deep.inline_walk_levels() or sys.maxsize)
    budget_end: int | None = None
    flags: Flags = field(default_factory=Flags)
    ref_records: dict[tuple[Any, ...], RefRecord] = field(default_factory=dict)
    # $ref target pointer -> every pointer a walk of it can resolve (see ``references``).
    ref_reach: dict[str, frozenset[str] | None] = field(default_factory=dict)
    # $ref target pointer -> the targets of the references below it, not through them (None
    # where one cannot be followed without reading another document).
    ref_direct: dict[str, tuple[tuple[str, Any], ...] | None] = field(default_factory=dict)
    # Inside a part whose objects list their keys in one order (an "exactly one" product).
    key_order: KeyOrder | None = None
    # Lenient: string length keywords (by pointer) dropped because the whole automaton was past
    # max_states and they cost the most (see ``pipeline``).
    dropped_lengths: frozenset[str] = frozenset()
    # Length counters (``automata.counted``): marker byte -> (minLength, maxLength) of the plain
    # strings compiled as counted regions; None when counters are off for this compile.
    markers: dict[int, tuple[int, int]] | None = None
    # Bounds (0, room) that an earlier attempt could not count: written out this time.
    uncounted: frozenset[tuple[int, int]] = frozenset()
    # Nest regions (``automata.nested``): the marker byte of a free value of any depth, or None
    # when free values are written out to the depth bound; ``nests_used`` once one is emitted.
    nest_marker: int | None = None
    nests_used: bool = False

    def __post_init__(self) -> None:
        declared = self.root.get("$schema", "") if isinstance(self.root, dict) else ""
        self.old_draft = any(d in str(declared) for d in _OLD_DRAFTS)
        self.new_draft = bool(declared) and not self.old_draft
        id_keywords = ("id",) if any(d in str(declared) for d in ("draft-04", "draft-03")) else ("$id",)
        self.resolver = RefResolver(
            self.root,
            self.old_draft if declared else None,
            id_keywords if declared else ("$id", "id"),
            DocumentSource(self.ref_roots),
        )
        self.openapi_document = has_openapi_intent(self.root)
        check_keyword_shapes(self.root)

    @property
    def ref_depth(self) -> int:
        """How many times a ``$ref`` target may be re-entered (``--max-depth`` for schemas)."""
        return self.limits.max_depth

    @cached_property
    def validator(self) -> Any:
        """A jsonschema validator of the root schema (with format checks), for enum and const
        candidates, that reads other documents as the resolver does (never from the network).
        Built on first use: importing jsonschema can take a second (its optional format packages
        build parsers at import), and most schemas never need it."""
        from jsonschema import FormatChecker, validators
        from referencing.jsonschema import DRAFT202012, specification_with

        validator_class = validators.validator_for(self.root, default=validators.Draft202012Validator)
        dialect = validator_class.META_SCHEMA.get("$schema", "")
        registry = self.resolver.registry(specification_with(dialect, default=DRAFT202012))
        validator = validator_class(self.root, format_checker=FormatChecker(), registry=registry)
        return ScopedValidator(validator, self.resolver)

    # ------------------------------------------------------------------ policy records

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

    def other_draft_keyword(self, keyword: str, where: str) -> None:
        """A keyword that the draft ``$schema`` declares does not have (dropped before the walk,
        see ``dialects``): an annotation, warned once per place (an error under
        ``refuse_unknown``)."""
        warning = other_draft_warning(keyword, where, declared_draft(self.root) or 0)
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
        self.warnings[f"OpenAPI keyword {keyword!r} at {where}: {meaning}"] = None

    def attempt(self, keyword: str, where: str, build: Callable[[], T]) -> T | None:
        """Run a keyword's builder (or checker); under lenient, a keyword that cannot be compiled
        is dropped (None)."""
        try:
            return build()
        except (UnsupportedError, SourceError) as error:
            if isinstance(error, UnsupportedError) and error.where:
                reason = str(error)
            else:
                reason = error.message if isinstance(error, SourceError) else str(error)
            self.refuse(keyword, reason, where)
            return None

    def within_bounds(self, keyword: str, where: str, build: Callable[[], T]) -> T | None:
        """Run the builder of a keyword's automaton; under lenient, a keyword whose automaton
        passes a bound (``--max-states``, ``--max-work``) is dropped with a warning naming the
        bound (None). Strict: the ``LimitError`` itself."""
        try:
            return build()
        except LimitError as error:
            if not self.lenient:
                raise
            self.drop(f"ignored keyword {keyword!r} at {where}: its automaton is past a bound: {error}")
            return None

    # ------------------------------------------------------------------ where the walk is

    @contextmanager
    def signed(self, sign: int) -> Iterator[None]:
        """Walk a part whose language enters the result with ``sign`` (-1: complemented, 0: both)."""
        saved = self.polarity
        self.polarity = saved * sign
        try:
            yield
        finally:
            self.polarity = saved

    @contextmanager
    def subschema(self, where: str) -> Iterator[None]:
        """Walk one more nested subschema, counted against ``max_nesting``."""
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
            if self.walk_depth > self.inline_levels:
                raise deep.NeedsDeepStack
            yield
        finally:
            self.walk_depth -= 1

    @contextmanager
    def deeper(self) -> Iterator[None]:
        """Walk the values inside an array or an object."""
        self.nesting += 1
        try:
            yield
        finally:
            self.nesting -= 1

    def past_budget(self) -> bool:
        """Whether the values walked now lie deeper than the depth budget (recorded as a cut)."""
        if self.budget_end is not None and self.nesting > self.budget_end:
            self.flags.depth_cut = True
            return True
        return False

    def depth_left(self) -> int:
        """How deep values may still nest: within the budget where one is set, else the $ref depth."""
        return self.ref_depth if self.budget_end is None else self.budget_end - self.nesting

    @contextmanager
    def bounded(self) -> Iterator[Flags]:
        """Walk a part that will go through a DFA product (``not``, ``if``, ``oneOf``): with fresh
        flags (handed to the block, and filled when it ends) and a depth budget when none is set
        yet; afterwards the outer flags learn what the part recorded and the budget is restored."""
        saved_flags, saved_budget = self.flags, self.budget_end
        inner = self.flags = Flags()
        if self.budget_end is None:
            self.budget_end = self.nesting + self.ref_depth
        try:
            yield inner
        finally:
            self.budget_end = saved_budget
            self.flags = saved_flags
            saved_flags.ordered |= inner.ordered
            saved_flags.ref_cut |= inner.ref_cut

    @contextmanager
    def without_nests(self) -> Iterator[None]:
        """Walk a part that a DFA product will take as an operand with its free values written out
        to the depth bound, not as nest markers (a product of markers says nothing of the values
        they stand for)."""
        saved = self.nest_marker
        self.nest_marker = None
        try:
            yield
        finally:
            self.nest_marker = saved

    @contextmanager
    def keys_ordered(self, order: KeyOrder) -> Iterator[None]:
        """Walk a part whose objects list their keys in ``order`` (an order already in force
        stays: it ranks every key of the outer part, this one's included)."""
        saved = self.key_order
        if saved is None:
            self.key_order = order
        try:
            yield
        finally:
            self.key_order = saved

    @contextmanager
    def probe(self) -> Iterator[None]:
        """A walk whose records are forgotten afterwards (flags, warnings, cuts, effects): a look
        at a language that decides something, whose parts the real walk meets again."""
        flags = self.flags
        records = (dict(self.warnings), dict(self.refs_cut), dict(self.effects), dict(self.bounded_cuts))
        self.flags = Flags()
        try:
            yield
        finally:
            self.flags = flags
            self.warnings, self.refs_cut, self.effects, self.bounded_cuts = records

    def replay(self, record: RefRecord) -> None:
        """Record again what walking a $ref target recorded the first time."""
        self.flags.absorb(record.flags)
        self.warnings.update(dict.fromkeys(record.warnings))
        self.refs_cut.update(dict.fromkeys(record.refs_cut))
        self.effects.update(dict.fromkeys(record.effects))
        self.bounded_cuts.update(dict.fromkeys(record.bounded_cuts))

    def bounded_product(self, keyword: str, where: str, depth: int) -> None:
        """Record that the product of ``keyword`` at ``where`` was taken within ``depth`` levels
        below it (values nested deeper are not in the language there)."""
        self.bounded_cuts[
            f"{keyword} at {where}: values nest at most {max(depth, 0)} levels below it (its product "
            "is taken within --max-depth)"
        ] = None
