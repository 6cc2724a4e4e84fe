"""The typed schema: one frozen record per instance type, what the emitters of ``types`` read.

Takes: nothing; ``normalize`` builds these records from a schema object.
Hands on: ``Subschema`` (a raw schema value with its JSON pointer, walked later by
``SchemaWalk.node``), ``StringKeywords``, ``NumberKeywords``, ``ArrayKeywords``,
``ObjectKeywords`` and ``Dependency``. Every keyword value in a record has been checked once (its
type, its range) and every draft difference resolved (draft-07 ``items`` arrays and
``additionalItems`` against ``prefixItems`` / ``items``, ``dependencies`` against
``dependentRequired`` / ``dependentSchemas``), so an emitter reads fields, never the dict, and
never asks which draft the document declares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from moonmaskc.frontends.schema.numbers import tighter_lower, tighter_upper
from moonmaskc.frontends.schema.numbers_ranges import Bound


@dataclass(frozen=True)
class Subschema:
    """A subschema as written (a dict or a boolean, checked when it is walked) and its pointer."""

    schema: Any
    where: str


@dataclass(frozen=True)
class StringKeywords:
    """``minLength`` / ``maxLength`` (0 and None when absent), ``pattern`` (a string) and the
    ``format`` whose language applies (a format we compile; an unknown name is an annotation
    and a format refused under lenient is dropped: both None). ``length_only``: neither
    ``pattern`` nor ``format`` is written beside the length bounds, not even one dropped, so
    nothing else may bound the length lower. Where ``max_length < min_length`` no string is
    valid and ``pattern`` / ``format`` are not read."""

    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    length_only: bool = True

    @property
    def empty(self) -> bool:
        """Whether the length bounds leave no string."""
        return self.max_length is not None and self.max_length < self.min_length


@dataclass(frozen=True)
class NumberKeywords:
    """The numeric keywords as exact decimals: ``minimum``, ``exclusive_minimum``, ``maximum``,
    ``exclusive_maximum`` and ``multiple_of`` (greater than 0), and whether fractions are
    allowed (``number``) or not (``integer``). ``key``: the keywords as written with their
    types, which tells equal keyword sets apart for the walk's cache (1 and 1.0 may print apart);
    None where the bounds were refused under lenient (an unbounded number, built at each place so
    that each place warns)."""

    fractions: bool
    minimum: Decimal | None = None
    exclusive_minimum: Decimal | None = None
    maximum: Decimal | None = None
    exclusive_maximum: Decimal | None = None
    multiple_of: Decimal | None = None
    key: tuple[Any, ...] | None = field(default=None, compare=False)

    @property
    def lower(self) -> Bound | None:
        """The tighter lower bound, inclusive or not (equal values: the exclusive one)."""
        return tighter_lower(self.minimum, self.exclusive_minimum)

    @property
    def upper(self) -> Bound | None:
        """The tighter upper bound, inclusive or not (equal values: the exclusive one)."""
        return tighter_upper(self.maximum, self.exclusive_maximum)


@dataclass(frozen=True)
class ArrayKeywords:
    """The elements by position (2020-12 ``prefixItems``, or a draft-07 ``items`` array, each
    with its pointer), the schema of the elements after them (``items``, or draft-07
    ``additionalItems``; ``true`` when absent), ``minItems`` / ``maxItems``, ``contains`` with
    ``minContains`` (1 when absent) and ``maxContains``, and ``unique_items``: ``uniqueItems:
    true`` where ``maxItems``, an integer, does not already allow one element at most. Where
    ``max_items < min_items`` no array is valid and the keywords after them are not read."""

    prefix: tuple[Subschema, ...]
    items: Subschema
    min_items: int = 0
    max_items: int | None = None
    contains: Subschema | None = None
    min_contains: int = 1
    max_contains: int | None = None
    unique_items: bool = False

    @property
    def empty(self) -> bool:
        """Whether the item counts leave no array."""
        return self.max_items is not None and self.max_items < self.min_items


@dataclass(frozen=True)
class ObjectKeywords:
    """``properties`` in declared order, ``required`` (each name once, in order), the schema of
    the other keys (``additionalProperties``; ``true`` when absent), ``patternProperties`` in
    declared order (pattern, value schema with its pointer; the pattern is compiled by the
    emitter), ``minProperties`` (0 when absent) / ``maxProperties`` and ``propertyNames``.
    Presence dependencies never reach a record: ``combinators`` splits them into plain schemas
    first (their typed form is ``Dependency``)."""

    properties: tuple[tuple[str, Subschema], ...]
    required: tuple[str, ...]
    additional: Subschema
    pattern_properties: tuple[tuple[str, Subschema], ...] = ()
    min_properties: int = 0
    max_properties: int | None = None
    property_names: Subschema | None = None

    @property
    def declared(self) -> dict[str, Subschema]:
        """The ``properties`` by name."""
        return dict(self.properties)


@dataclass(frozen=True)
class Dependency:
    """One presence dependency (``dependentRequired`` / ``dependentSchemas``, or draft-07
    ``dependencies`` in either form): when ``key`` is present, so are ``names`` and the object is
    valid for ``schema`` (None: names only)."""

    key: str
    names: tuple[str, ...] = ()
    schema: Subschema | None = None
