"""moonmaskc: compile regexes, GBNF grammars and JSON Schemas into token-mask artifacts.

The public API, imported lazily so that ``import moonmaskc.runtime`` needs only numpy:

- ``compile_regex(pattern, **options)``, ``compile_gbnf(text, **options)``,
  ``compile_schema(schema, **options)``: an in-memory ``Artifact`` (``.save(path)``, ``.match(text)``).
- ``load_artifact(path)``: an ``Artifact`` read back from a file.
- ``load(path)``: a runtime ``Guide`` for decoding; ``load_vocabulary(spec)``: a ``Vocabulary``.
- ``MoonmaskError`` and its subclasses in ``moonmaskc.errors``.

Options: ``max_states``, ``max_repeat``, ``max_depth``, ``start`` (GBNF), ``whitespace``,
``lenient``, ``refuse_unknown`` and ``ref_roots`` (schema: ``{URI prefix: local folder}``, where
references to other documents are read offline), ``tokenizer`` (default ``"bytes"``) and ``eos``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc.errors import (
    ArtifactError,
    LimitError,
    MoonmaskError,
    RuntimeInputError,
    SourceError,
    UnsupportedError,
    VocabularyError,
)
from moonmaskc.version import __version__

if TYPE_CHECKING:
    from moonmaskc.artifact import Artifact
    from moonmaskc.runtime import Guide
    from moonmaskc.vocabulary import Vocabulary

__all__ = [
    "ArtifactError",
    "LimitError",
    "MoonmaskError",
    "RuntimeInputError",
    "SourceError",
    "UnsupportedError",
    "VocabularyError",
    "__version__",
    "compile_gbnf",
    "compile_regex",
    "compile_schema",
    "load",
    "load_artifact",
    "load_vocabulary",
]


def compile_regex(pattern: str, **options: Any) -> Artifact:
    """Compile a regex (whole-text match) into an artifact."""
    from moonmaskc.pipeline import compile_source, make_options

    return compile_source("regex", pattern, make_options(**options))


def compile_gbnf(text: str, **options: Any) -> Artifact:
    """Compile a GBNF grammar (start rule ``root`` unless ``start=``) into an artifact."""
    from moonmaskc.pipeline import compile_source, make_options

    return compile_source("gbnf", text, make_options(**options))


def compile_schema(schema: dict[str, Any] | bool | str, **options: Any) -> Artifact:
    """Compile a JSON Schema (a dict, or JSON text) into an artifact."""
    from moonmaskc.pipeline import compile_source, make_options

    return compile_source("schema", schema, make_options(**options))


def load_artifact(path: str) -> Artifact:
    from moonmaskc.artifact import Artifact

    return Artifact.load(path)


def load(path: str, tokenizer: Any = None) -> Guide:
    """A runtime ``Guide`` for the artifact at ``path``."""
    from moonmaskc.runtime import Guide

    return Guide.load(path, tokenizer=tokenizer)


def load_vocabulary(spec: Any, eos: str | None = None) -> Vocabulary:
    from moonmaskc.vocabulary import load_vocabulary as _load_vocabulary

    return _load_vocabulary(spec, eos=eos)
