"""The one error hierarchy of moonmaskc.

Takes: a message and, for source errors, the source text and a character offset.
Hands on: exceptions whose ``str()`` is one clear paragraph; source errors add the offending line
with a caret under the position. The CLI prints ``str(error)`` and exits non-zero, never a traceback.
"""

from __future__ import annotations


class MoonmaskError(Exception):
    """Base class of every error moonmaskc raises on purpose."""


class SourceError(MoonmaskError):
    """A syntax error in a regex, a grammar or a schema file, with its position.

    ``position`` is a character offset into ``source``; ``line`` and ``column`` are 1-based.
    """

    def __init__(self, message: str, source: str | None = None, position: int | None = None) -> None:
        self.message = message
        self.source = source
        self.position = position
        self.line: int | None = None
        self.column: int | None = None
        if source is not None and position is not None:
            position = max(0, min(position, len(source)))
            self.line = source.count("\n", 0, position) + 1
            self.column = position - (source.rfind("\n", 0, position) + 1) + 1
        super().__init__(self._render())

    def _render(self) -> str:
        if self.source is None or self.position is None or self.line is None or self.column is None:
            return self.message
        where = f"line {self.line}, column {self.column}"
        lines = self.source.split("\n")
        text = lines[self.line - 1] if self.line - 1 < len(lines) else ""
        if len(text) > 120:
            start = max(0, self.column - 60)
            shown = text[start : start + 120]
            caret_col = self.column - 1 - start
        else:
            shown = text
            caret_col = self.column - 1
        return f"{self.message} (at {where})\n  {shown}\n  {' ' * caret_col}^"


class UnsupportedError(SourceError):
    """A construct or keyword that moonmaskc cannot compile exactly.

    ``construct`` names it; ``where`` is a position description such as a JSON pointer.
    """

    def __init__(
        self,
        construct: str,
        reason: str,
        source: str | None = None,
        position: int | None = None,
        where: str | None = None,
    ) -> None:
        self.construct = construct
        self.where = where
        location = f" at {where}" if where else ""
        super().__init__(f"unsupported {construct}{location}: {reason}", source, position)


class LimitError(MoonmaskError):
    """A bound was hit. ``bound`` names it (for instance ``max_states``); ``flag`` raises it."""

    def __init__(
        self,
        bound: str,
        limit: int,
        message: str,
        flag: str | None = None,
        costly: dict[str, int] | None = None,
    ) -> None:
        self.bound = bound
        self.limit = limit
        self.flag = flag
        self.message = message
        # A schema's string length bounds that need the most states (keyword pointer -> states).
        self.costly = costly or {}
        hint = f" Raise it with {flag}." if flag else ""
        super().__init__(f"{message} (bound {bound} = {limit}).{hint}")


class ArtifactError(MoonmaskError):
    """An artifact file that cannot be used: truncated, corrupted, foreign, wrong version."""


class VocabularyError(MoonmaskError):
    """A tokenizer that cannot be read, or that does not match an artifact."""


class RuntimeInputError(MoonmaskError):
    """Bad input to the runtime: NaN or +inf logits, a wrong length, an unknown state or token."""


class MalformedArraysError(MoonmaskError, ValueError):
    """Arrays handed to an automata stage (and so, possibly, to the native core) that break the
    stage's contract: a wrong dtype, shape or layout, an index out of range, offsets that are not
    monotone, a live or accepting dead state. Raised before any native code reads them."""


MalformedDFAError = MalformedArraysError
NFAArraysError = MalformedArraysError
