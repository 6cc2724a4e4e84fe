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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from moonmaskc.automata.counted import Regions, distances_agree
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import ArtifactError, RuntimeInputError
from moonmaskc.format import (
    COUNTED_FORMAT_VERSION,
    DEFAULT_MAX_BYTES,
    DFA_ARRAYS,
    FORMAT_NAME,
    FORMAT_VERSION,
    IDENTITY_ARRAYS,
    REGION_ARRAYS,
    REGION_COUNTS_ARRAY,
    ArrayChecker,
    ArtifactFile,
    check_metadata,
    write_artifact,
)

if TYPE_CHECKING:
    from moonmaskc.token_table import TokenTable

REQUIRED_ARRAYS = (*IDENTITY_ARRAYS, *DFA_ARRAYS)


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
        """Whether ``text`` (a ``str``, or its UTF-8 bytes) is accepted, and where it dies if not.
        A ``str`` that UTF-8 cannot encode (a lone surrogate) is a ``RuntimeInputError``."""
        if isinstance(text, bytearray | memoryview):
            text = bytes(text)
        if isinstance(text, str):
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise RuntimeInputError(
                    f"the text holds a lone surrogate U+{ord(text[error.start]):04X} at character "
                    f"{error.start}, which UTF-8 cannot encode"
                ) from None
        elif isinstance(text, bytes):
            data = text
        else:
            raise RuntimeInputError(f"a text to match is a str or bytes, not {type(text).__name__}")
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
        if dfa.regions is not None:
            regions = dfa.regions
            arrays["format_version"] = np.array(COUNTED_FORMAT_VERSION, dtype=np.int32)
            arrays.update(
                dfa_region=regions.region.astype(np.int32),
                dfa_role=regions.role.astype(np.int32),
                dfa_region_low=regions.low.astype(np.int32),
                dfa_region_high=regions.high.astype(np.int32),
                dfa_region_boundary=regions.boundary.astype(np.int32),
            )
        if dfa.nests is not None:
            from moonmaskc.nest_format import NEST_FORMAT_VERSION, nest_arrays

            arrays["format_version"] = np.array(NEST_FORMAT_VERSION, dtype=np.int32)
            arrays.update(nest_arrays(dfa.nests))
        if self.token_table is not None:
            table_arrays = self.token_table.to_arrays()
            clash = set(table_arrays) & set(arrays)
            if clash:
                raise ValueError(f"token table arrays clash with artifact arrays: {sorted(clash)}")
            arrays.update(table_arrays)
        return arrays

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the artifact atomically: a temporary file beside ``path``, then a rename."""
        return write_artifact(path, self.to_arrays())

    @classmethod
    def load(cls, path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> Artifact:
        return artifact_from_arrays(read_arrays(path, max_bytes), source=str(path))


def write_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> Path:
    """``moonmaskc.format.write_artifact`` (kept under this name for callers of version 1)."""
    return write_artifact(path, arrays)


def read_arrays(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, np.ndarray]:
    """Read and check every array of an artifact (any readable format version).

    Raises ``ArtifactError`` for a missing, truncated, corrupted or foreign file, another version,
    or an array past ``max_bytes``."""
    location = Path(path)
    archive = ArtifactFile(location, max_bytes)
    missing = [name for name in REQUIRED_ARRAYS if name not in archive]
    if missing:
        raise ArtifactError(f"{location} lacks the arrays {', '.join(missing)}")
    arrays = {name: archive[name] for name in archive}
    regions_present = "dfa_region" in arrays
    nests_present = any(name.startswith("dfa_nest_") for name in arrays)
    _check_dfa_arrays(arrays, location, plain_distances=not regions_present and not nests_present)
    present = [name for name in REGION_ARRAYS if name in arrays]
    if archive.version == COUNTED_FORMAT_VERSION or present:  # version 5 may have them or not
        if archive.version < COUNTED_FORMAT_VERSION or len(present) < len(REGION_ARRAYS):
            raise ArtifactError(
                f"{location} is corrupted: format version {archive.version} with "
                f"{len(present)} of the {len(REGION_ARRAYS)} counted-region arrays"
            )
        _check_region_arrays(arrays, location, distances=not nests_present)
    _check_nest_presence(arrays, archive.version, nests_present, location)
    has_table = any(name.startswith("tokens_") for name in arrays)
    if has_table and (REGION_COUNTS_ARRAY in arrays) != regions_present:
        raise ArtifactError(
            f"{location} is corrupted: a token table {'without' if regions_present else 'with'} "
            f"'{REGION_COUNTS_ARRAY}' for a DFA {'with' if regions_present else 'without'} counted regions"
        )
    return arrays


def _check_nest_presence(arrays: dict[str, np.ndarray], version: int, present: bool, location: Path) -> None:
    """Nest regions (format 5): all their arrays or none, and the version that holds them; then
    their checks (``nest_format.checked_nests``), and the table's dynamic tokens with a table."""
    from moonmaskc.nest_format import NEST_FORMAT_VERSION, NEST_TOKEN_ARRAYS, checked_dynamic, checked_nests

    if not present and version < NEST_FORMAT_VERSION:
        if any(name in arrays for name in NEST_TOKEN_ARRAYS):
            raise ArtifactError(f"{location} is corrupted: dynamic tokens for a DFA without nest regions")
        return
    if not present or version < NEST_FORMAT_VERSION:
        raise ArtifactError(
            f"{location} is corrupted: format version {version} and nest-region arrays disagree"
        )
    checked_nests(arrays, str(location))
    if any(name.startswith("tokens_") for name in arrays):
        vocab_size = (
            int(np.asarray(arrays["tokens_token_class"]).shape[0]) if "tokens_token_class" in arrays else 0
        )
        checked_dynamic(arrays, int(arrays["dfa_transitions"].shape[0]), vocab_size, str(location))


def _check_dfa_arrays(arrays: dict[str, np.ndarray], location: Path, plain_distances: bool = True) -> None:
    """The DFA arrays' dtypes, shapes and ranges; state 0 dead; distances that agree with the
    transitions (each live state one byte farther than its nearest successor, 0 exactly where it
    accepts), so that nothing that walks them can loop or be misled. With counted regions the
    distances are checked with the regions (``_check_region_arrays``)."""
    check = ArrayChecker(str(location))
    transitions = arrays["dfa_transitions"]
    if transitions.ndim != 2 or transitions.shape[0] < 1 or transitions.shape[1] < 1:
        raise check.fail("dfa_transitions", f"has shape {transitions.shape}, expected [states, classes]")
    n, k = transitions.shape
    check.array("dfa_transitions", transitions, "iu", (n, k), 0, n)
    check.array("dfa_byte_class", arrays["dfa_byte_class"], "iu", (256,), 0, k)
    accepting = check.array("dfa_accepting", arrays["dfa_accepting"], "b", (n,))
    distance = check.array("dfa_distance", arrays["dfa_distance"], "i", (n,), -1, None)
    check.start(arrays["dfa_start"], n)
    if np.any(transitions[0] != 0) or bool(accepting[0]) or int(distance[0]) != -1:
        raise check.fail("dfa_transitions", "does not keep state 0 dead")
    live = distance[1:] >= 0
    if not live.all():
        raise check.fail("dfa_distance", "marks a state other than 0 as unable to accept")
    if not np.array_equal(distance == 0, accepting):
        raise check.fail("dfa_distance", "is not 0 exactly at the accepting states")
    if not plain_distances:
        return
    wide = distance.astype(np.int64)
    following = np.where(transitions != 0, wide[transitions], np.iinfo(np.int64).max // 2)
    nearest = following[1:].min(axis=1)
    expected = np.where(accepting[1:], 0, nearest + 1)
    if not np.array_equal(expected, distance[1:]):
        raise check.fail("dfa_distance", "disagrees with the transitions")


def _check_region_arrays(arrays: dict[str, np.ndarray], location: Path, distances: bool = True) -> None:
    """The counted regions' arrays (format 4): dtypes, shapes and ranges; one boundary per region,
    the only state of its region that an edge from outside may enter; edges from a region's other
    states stay inside it; accepting states outside every region; bounds ``0 <= low <= high``."""
    check = ArrayChecker(str(location))
    transitions = arrays["dfa_transitions"]
    n = transitions.shape[0]
    high = check.array("dfa_region_high", arrays["dfa_region_high"], "i", (None,), 0, 1 << 31)
    count = len(high)
    if count < 1:
        raise check.fail("dfa_region_high", "lists no region")
    low = check.array("dfa_region_low", arrays["dfa_region_low"], "i", (count,), 0, 1 << 31)
    if np.any(low > high):
        raise check.fail("dfa_region_low", "has a region whose lower bound is above its upper bound")
    region = check.array("dfa_region", arrays["dfa_region"], "i", (n,), -1, count)
    role = check.array("dfa_role", arrays["dfa_role"], "i", (n,), -1, n)
    boundary = check.array("dfa_region_boundary", arrays["dfa_region_boundary"], "i", (count,), 1, n)
    if not np.array_equal(region < 0, role < 0):
        raise check.fail("dfa_role", "does not give a role exactly to the states in regions")
    if np.any(region[boundary] != np.arange(count)) or np.any(role[boundary] != 0):
        raise check.fail("dfa_region_boundary", "names a state that is not its region's boundary")
    if np.count_nonzero(role == 0) != count:
        raise check.fail("dfa_role", "gives the boundary role to more states than there are regions")
    if np.any(arrays["dfa_accepting"] & (region >= 0)) or region[0] != -1:
        raise check.fail("dfa_region", "puts the dead state or an accepting state in a region")
    wide = transitions.astype(np.int64)
    target_region = region[wide]
    source_region = region[:, None]
    entering = (target_region >= 0) & (target_region != source_region) & (wide != 0)
    if np.any(role[wide[entering]] != 0):
        raise check.fail("dfa_region", "has an edge into a region that does not enter at its boundary")
    inner = (role[:, None] > 0) & (wide != 0) & (target_region != source_region)
    if np.any(inner):
        raise check.fail("dfa_region", "has an edge out of a region from a state other than its boundary")
    loops = wide[boundary] == boundary[:, None]
    if not np.all(loops.any(axis=1)):
        raise check.fail("dfa_region_boundary", "names a boundary without a one-byte character")
    regions = Regions(region.astype(np.int32), role.astype(np.int32), low, high, boundary)
    if distances and not distances_agree(
        transitions, arrays["dfa_accepting"], arrays["dfa_distance"], regions
    ):
        raise check.fail("dfa_distance", "disagrees with the transitions and the counted regions")


def check_dfa_arrays(arrays: dict[str, np.ndarray], source: str | os.PathLike[str]) -> None:
    """The DFA arrays of a file with nest regions, checked as ``read_arrays`` checks them (their
    distances by ``nest_format.checked_nests``)."""
    location = Path(source)
    missing = [name for name in DFA_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{location} lacks the arrays {', '.join(missing)}")
    _check_dfa_arrays(arrays, location, plain_distances=False)


def checked_regions(
    arrays: dict[str, np.ndarray], source: str | os.PathLike[str]
) -> tuple[Regions, np.ndarray, np.ndarray]:
    """The counted regions of a DFA's arrays (``dfa_*``, format 4), checked with the DFA arrays
    as ``read_arrays`` checks them, and its transitions and byte classes: what the runtime's
    ``CountedGuide`` steps tokens with."""
    location = Path(source)
    missing = [name for name in DFA_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{location} lacks the arrays {', '.join(missing)}")
    _check_dfa_arrays(arrays, location, plain_distances=False)
    missing = [name for name in REGION_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{location} lacks the counted-region arrays {', '.join(missing)}")
    _check_region_arrays(arrays, location, distances="dfa_nest_region" not in arrays)
    regions = Regions(*(np.asarray(arrays[name], dtype=np.int32) for name in REGION_ARRAYS))
    transitions = np.ascontiguousarray(arrays["dfa_transitions"], dtype=np.int32)
    return regions, transitions, np.asarray(arrays["dfa_byte_class"], dtype=np.int32)


def artifact_from_arrays(arrays: dict[str, np.ndarray], source: str = "<memory>") -> Artifact:
    dfa = DFA(
        arrays["dfa_transitions"],
        arrays["dfa_byte_class"].astype(np.int32),
        arrays["dfa_accepting"],
        int(arrays["dfa_start"]),
        arrays["dfa_distance"],
    )
    if "dfa_region" in arrays:
        dfa.regions = Regions(
            arrays["dfa_region"].astype(np.int32),
            arrays["dfa_role"].astype(np.int32),
            arrays["dfa_region_low"].astype(np.int32),
            arrays["dfa_region_high"].astype(np.int32),
            arrays["dfa_region_boundary"].astype(np.int32),
        )
    if "dfa_nest_region" in arrays:
        from moonmaskc.nest_format import checked_nests

        dfa.nests = checked_nests(arrays, source)
    metadata = check_metadata(str(arrays["metadata"]))
    token_table = None
    if any(name.startswith("tokens_") for name in arrays):
        from moonmaskc.token_table import TokenTable

        try:
            token_table = TokenTable.from_arrays(arrays)
        except (KeyError, ValueError, IndexError) as error:
            raise ArtifactError(f"{source}: the token table is corrupted ({error})") from None
    return Artifact(dfa, metadata, token_table)
