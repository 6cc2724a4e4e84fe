"""The ``.npz`` artifact: writing it atomically, reading and validating it.

Takes: a DFA, metadata (a JSON-able dict) and optionally a token table's arrays. Hands on: a file
that ``numpy.load(path, allow_pickle=False)`` opens with no help from this package, and ``Artifact``
objects read back from it. Only numpy and the standard library are imported here, so the runtime
can use this module (the token table module is imported lazily, when the file holds a table).

The layout is documented array by array in ``docs/artifact-format.md``: a format name and version
(checked on load), the DFA (``dfa_*``), metadata as JSON text, and, when linked to a vocabulary,
the vocabulary fingerprint and the token table (``vocab_*``, ``tokens_*``).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import ArtifactError

if TYPE_CHECKING:
    from moonmaskc.token_table import TokenTable

FORMAT_NAME = "moonmaskc-artifact"
FORMAT_VERSION = 1
REQUIRED_ARRAYS = (
    "format",
    "format_version",
    "metadata",
    "dfa_transitions",
    "dfa_byte_class",
    "dfa_accepting",
    "dfa_distance",
    "dfa_start",
)


@dataclass
class MatchResult:
    """Whether ``text`` is accepted, still a live prefix, and where it died (byte offset)."""

    text: str
    accepted: bool
    live: bool
    offset: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "accepted": self.accepted, "live": self.live, "offset": self.offset}


@dataclass
class Artifact:
    """A compiled constraint: the minimal DFA, its metadata and, when linked, a token table."""

    dfa: DFA
    metadata: dict[str, Any] = field(default_factory=dict)
    token_table: TokenTable | None = None

    def match(self, text: str | bytes) -> MatchResult:
        data = text.encode("utf-8") if isinstance(text, str) else text
        shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
        state, died_at = self.dfa.walk(data)
        if died_at is not None:
            return MatchResult(shown, False, False, died_at)
        return MatchResult(shown, bool(self.dfa.accepting[state]), True, None)

    def to_arrays(self) -> dict[str, np.ndarray]:
        dfa = self.dfa
        arrays: dict[str, np.ndarray] = {
            "format": np.array(FORMAT_NAME),
            "format_version": np.array(FORMAT_VERSION, dtype=np.int32),
            "metadata": np.array(json.dumps(self.metadata, ensure_ascii=False, sort_keys=True)),
            "dfa_transitions": dfa.transitions.astype(np.int32),
            "dfa_byte_class": dfa.byte_class.astype(np.uint8 if dfa.num_classes <= 256 else np.int32),
            "dfa_accepting": dfa.accepting.astype(bool),
            "dfa_distance": dfa.distance.astype(np.int32),
            "dfa_start": np.array(dfa.start, dtype=np.int32),
        }
        if self.token_table is not None:
            table_arrays = self.token_table.to_arrays()
            clash = set(table_arrays) & set(arrays)
            if clash:
                raise ValueError(f"token table arrays clash with artifact arrays: {sorted(clash)}")
            arrays.update(table_arrays)
        return arrays

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the artifact atomically: a temporary file beside ``path``, then a rename."""
        return write_arrays(path, self.to_arrays())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Artifact:
        return artifact_from_arrays(read_arrays(path), source=str(path))


def write_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> Path:
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ArtifactError(f"cannot write {target}: folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez_compressed(stream, **arrays)  # type: ignore[arg-type]
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_current_umask())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_arrays(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read every array of an artifact, checking the format name and version.

    Raises ``ArtifactError`` for a missing, truncated, corrupted or foreign file, or another version.
    """
    location = Path(path)
    if not location.is_file():
        raise ArtifactError(f"{location}: no such artifact file")
    try:
        with np.load(location, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, zipfile.LargeZipFile) as error:
        raise ArtifactError(
            f"{location} is not a readable moonmaskc artifact "
            f"(truncated, corrupted or not an .npz file: {error})"
        ) from None
    except Exception as error:  # zlib.error and friends from a damaged member
        raise ArtifactError(f"{location} is corrupted: {type(error).__name__}: {error}") from None
    if "format" not in arrays or str(arrays["format"]) != FORMAT_NAME:
        raise ArtifactError(
            f"{location} is an .npz file but not a moonmaskc artifact (no '{FORMAT_NAME}' label)"
        )
    version = int(arrays["format_version"]) if "format_version" in arrays else -1
    if version != FORMAT_VERSION:
        raise ArtifactError(
            f"{location} has artifact format version {version}; "
            f"this moonmaskc reads version {FORMAT_VERSION}. "
            "Recompile it with this version."
        )
    missing = [name for name in REQUIRED_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{location} lacks the arrays {', '.join(missing)}")
    _check_dfa_arrays(arrays, location)
    return arrays


def _check_dfa_arrays(arrays: dict[str, np.ndarray], location: Path) -> None:
    transitions = arrays["dfa_transitions"]
    byte_class = arrays["dfa_byte_class"]
    problems = []
    if transitions.ndim != 2 or transitions.shape[0] < 1 or transitions.shape[1] < 1:
        problems.append("dfa_transitions is not a non-empty 2-D table")
    else:
        n, k = transitions.shape
        if transitions.min() < 0 or transitions.max() >= n:
            problems.append("dfa_transitions points outside the table")
        if byte_class.shape != (256,) or byte_class.max() >= k:
            problems.append("dfa_byte_class does not map 256 bytes to columns")
        if arrays["dfa_accepting"].shape != (n,) or arrays["dfa_distance"].shape != (n,):
            problems.append("dfa_accepting / dfa_distance do not have one entry per state")
        elif not 0 <= int(arrays["dfa_start"]) < n:
            problems.append("dfa_start is not a state")
        elif np.any(transitions[0] != 0) or bool(arrays["dfa_accepting"][0]):
            problems.append("state 0 is not the dead state")
    try:
        json.loads(str(arrays["metadata"]))
    except ValueError:
        problems.append("metadata is not JSON")
    if problems:
        raise ArtifactError(f"{location} is corrupted: {'; '.join(problems)}")


def artifact_from_arrays(arrays: dict[str, np.ndarray], source: str = "<memory>") -> Artifact:
    dfa = DFA(
        arrays["dfa_transitions"],
        arrays["dfa_byte_class"].astype(np.int32),
        arrays["dfa_accepting"],
        int(arrays["dfa_start"]),
        arrays["dfa_distance"],
    )
    metadata = json.loads(str(arrays["metadata"]))
    token_table = None
    if any(name.startswith("tokens_") for name in arrays):
        from moonmaskc.token_table import TokenTable

        try:
            token_table = TokenTable.from_arrays(arrays)
        except (KeyError, ValueError, IndexError) as error:
            raise ArtifactError(f"{source}: the token table is corrupted ({error})") from None
    return Artifact(dfa, metadata, token_table)
