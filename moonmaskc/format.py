"""The artifact format: every array name, the version, writing, reading and checking.

Takes: a dict of named numpy arrays (``write_artifact``) or a file path (``ArtifactFile``). Hands
on: a ``.npz`` file that ``numpy.load(path, allow_pickle=False)`` opens with no help from this
package, and, reading back, an ``ArtifactFile`` that serves each array on first use:

- arrays that serving reads at once (scalars, the mask rows as deltas, the row of each state,
  the token classes, acceptance and distances) are stored uncompressed and read as read-only
  views of a memory map of the file: loading costs what parsing the zip directory costs;
- the large arrays that only some calls need (the next states, the DFA's transition table, the
  token bytes) are deflated and inflated on first use.

Version 3 stores the next states compactly (``NEXT_ARRAYS``: each mask row's allowed classes, and
each state's next states in that order; ``moonmaskc.next_table``); versions 1 and 2 stored a dense
``[states, classes]`` table (``DENSE_NEXT_ARRAY``), which readers convert to the compact form.

Every array is checked before it is used: its dtype, shape and value range (``ArrayChecker``
for the cheap checks at load, the per-array checks when a deflated array is first inflated; the
next states as a whole by ``check_next_arrays``, the mask deltas by ``check_mask_arrays``).
Declared sizes are bounded before anything is allocated (``max_bytes``, the ``--max-artifact-bytes``
flag). A file that fails a check is an ``ArtifactError`` that names the file and the array.

Mask rows are stored as deltas (``encode_mask_rows``): each row is a copy of an earlier row (or of
the empty row) with some words replaced, at most ``MAX_DELTA_DEPTH`` copies deep, so a row costs a
few copies the first time it is used and one row copy after that.

Only numpy and the standard library are imported here: the runtime uses this module.
"""

from __future__ import annotations

import ast
import hashlib
import json
import mmap
import os
import re
import struct
import tempfile
import threading
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from moonmaskc.errors import ArtifactError

FORMAT_NAME = "moonmaskc-artifact"
FORMAT_VERSION = 3
COUNTED_FORMAT_VERSION = 4  # written only for a DFA with counted regions (``REGION_ARRAYS``)
READABLE_VERSIONS = (1, 2, 3, 4, 5)  # 5: nest regions (``moonmaskc.nest_format``)
DEFAULT_MAX_BYTES = 1 << 31  # per array, declared (uncompressed) size; --max-artifact-bytes
MAX_DELTA_DEPTH = 8
DELTA_WINDOW = 32
DEFLATE_LEVEL = 1  # the cold arrays: level 6 saves about 10% more and takes 4x longer

# The arrays of an artifact, in groups. Deflated ones are inflated on first use.
IDENTITY_ARRAYS = ("format", "format_version", "metadata")
DFA_ARRAYS = ("dfa_transitions", "dfa_byte_class", "dfa_accepting", "dfa_distance", "dfa_start")
# Version 4: the counted regions of the DFA (``moonmaskc.automata.counted``).
REGION_ARRAYS = ("dfa_region", "dfa_role", "dfa_region_low", "dfa_region_high", "dfa_region_boundary")
MASK_ARRAYS = (
    "tokens_mask_base",
    "tokens_mask_delta_offsets",
    "tokens_mask_delta_index",
    "tokens_mask_delta_value",
)
NEXT_ARRAYS = ("tokens_row_class_offsets", "tokens_row_classes", "tokens_next_offsets", "tokens_next")
DENSE_NEXT_ARRAY = "tokens_class_next"  # versions 1 and 2: the dense [states, classes] table
TABLE_ARRAYS = ("tokens_state_row", "tokens_token_class", *NEXT_ARRAYS, *MASK_ARRAYS)
V2_TABLE_ARRAYS = ("tokens_state_row", "tokens_token_class", DENSE_NEXT_ARRAY, *MASK_ARRAYS)
OPTIONAL_TABLE_ARRAYS = ("tokens_eos_steps",)
REGION_COUNTS_ARRAY = "tokens_region_counts"  # version 4: int16[roles, vocab] (counted regions)
FINGERPRINT_LABEL = b"moonmaskc-vocabulary-v1\x00"


def vocabulary_fingerprint(lengths: np.ndarray, data: bytes, eos_id: int, special_ids: Any) -> str:
    """``vocab_fingerprint``: SHA-256 (hex) over the label, the token count, the eos id, the
    special ids, each token's byte length (little-endian uint32) and the tokens' bytes in id order.
    Here so that a runtime with numpy alone can check a stored vocabulary against it."""
    specials = np.asarray(special_ids, dtype="<i8").reshape(-1)
    digest = hashlib.sha256(FINGERPRINT_LABEL)
    digest.update(np.array([len(lengths), eos_id, len(specials)], dtype="<i8").tobytes())
    digest.update(specials.tobytes())
    digest.update(np.asarray(lengths, dtype="<u4").tobytes())
    digest.update(data)
    return digest.hexdigest()


VOCAB_ARRAYS = (
    "vocab_name",
    "vocab_fingerprint",
    "vocab_eos_id",
    "vocab_eos_token",
    "vocab_special_ids",
    "vocab_token_lengths",
    "vocab_token_bytes",
)
DEFLATED_ARRAYS = frozenset(
    {
        "dfa_transitions",
        "dfa_byte_class",
        "tokens_row_classes",
        "tokens_next_offsets",
        "tokens_next",
        "vocab_token_lengths",
        "vocab_token_bytes",
    }
)
V1_MASK_ARRAY = "tokens_mask_rows"
_NPY_MAGIC = b"\x93NUMPY"
_SIMPLE_HEADER = re.compile(
    r"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (True|False), 'shape': \(([\d, ]*)\), \}\s*$"
)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def write_artifact(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``arrays`` as an artifact at ``path`` atomically (a temporary file beside it, flushed,
    then renamed over it); the large cold arrays deflated, the rest stored as they are."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ArtifactError(f"cannot write {target}: folder {folder} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            with zipfile.ZipFile(stream, "w", allowZip64=True, compresslevel=DEFLATE_LEVEL) as archive:
                for name, array in arrays.items():
                    info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                    deflated = name in DEFLATED_ARRAYS
                    info.compress_type = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
                    info._compresslevel = DEFLATE_LEVEL  # type: ignore[attr-defined]  # read by ZipFile.open
                    with archive.open(info, "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
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


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


class ArtifactFile(Mapping[str, np.ndarray]):
    """The arrays of an artifact file, each read (and checked) on first use; a read-only mapping.

    Version 2 and 3 files are memory-mapped; version 1 files (all arrays deflated) are read with
    ``numpy.load``. ``metadata`` is the parsed JSON object."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._arrays: dict[str, np.ndarray] = {}
        self._members: dict[str, zipfile.ZipInfo] = {}
        self._map: mmap.mmap | None = None
        self._archive: zipfile.ZipFile | None = None
        self._lock = threading.Lock()  # the zip reader shares one file position
        self._open()
        if "format" not in self._members:
            raise self.error(f"is an .npz file but not a moonmaskc artifact (no '{FORMAT_NAME}' label)")
        name = self._scalar_text("format")
        if name != FORMAT_NAME:
            raise self.error(f"is an .npz file but not a moonmaskc artifact (no '{FORMAT_NAME}' label)")
        version = self._scalar_int("format_version")
        if version not in READABLE_VERSIONS:
            raise self.error(
                f"has artifact format version {version}; this moonmaskc reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}. Recompile it with this version."
            )
        self.version = version
        self.metadata = check_metadata(self._scalar_text("metadata"), self)

    def error(self, message: str) -> ArtifactError:
        return ArtifactError(f"{self.path} {message}")

    def _open(self) -> None:
        if not self.path.is_file():
            raise ArtifactError(f"{self.path}: no such artifact file")
        try:
            stream = open(self.path, "rb")  # kept open: deflated members are read on first use
            size = os.fstat(stream.fileno()).st_size
            if size == 0:
                stream.close()
                raise self.error("is empty (truncated or not an artifact)")
            self._map = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
            self._archive = zipfile.ZipFile(stream)
        except ArtifactError:
            raise
        except Exception as error:  # whatever the zip reader makes of damaged bytes
            raise self.error(
                f"is not a readable moonmaskc artifact (truncated, corrupted or not an .npz file: "
                f"{type(error).__name__}: {error})"
            ) from None
        for info in self._archive.infolist():
            if info.filename.endswith(".npy"):
                self._members[info.filename[:-4]] = info

    # mapping interface ------------------------------------------------------------------------

    def __getitem__(self, name: str) -> np.ndarray:
        found = self._arrays.get(name)
        if found is None:
            if name not in self._members:
                raise KeyError(name)
            found = self._arrays[name] = self._read(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def verify_checksums(self) -> None:
        """Check every member against the CRC-32 its zip entry records (stored members are read
        through the memory map, which skips zip's own check); ``ArtifactError`` on a mismatch."""
        import zlib

        for name, info in self._members.items():
            if info.compress_type == zipfile.ZIP_STORED and self._map is not None:
                self._mapped(name, info)  # checks the bounds
                start = info.header_offset
                fields = _LOCAL_HEADER.unpack_from(self._map, start)
                data_start = start + _LOCAL_HEADER.size + fields[-2] + fields[-1]
                found = zlib.crc32(memoryview(self._map)[data_start : data_start + info.file_size])
                if found != info.CRC:
                    raise self.error(f"is corrupted: '{name}' does not match its checksum")
            else:
                self[name]  # zipfile checks the CRC of what it inflates

    def declared_shape(self, name: str) -> tuple[int, ...]:
        """The shape of ``name`` from its header, without reading (or inflating) its data."""
        header = self._header(name, self._members[name])
        return header[1]

    # members ----------------------------------------------------------------------------------

    def _read(self, name: str) -> np.ndarray:
        info = self._members[name]
        if info.file_size > self.max_bytes:
            raise self.error(
                f"declares {info.file_size:,} bytes for '{name}', more than the bound of "
                f"{self.max_bytes:,} (raise it with --max-artifact-bytes)"
            )
        try:
            if info.compress_type == zipfile.ZIP_STORED and self._map is not None:
                return self._mapped(name, info)
            assert self._archive is not None
            with self._lock:
                data = self._archive.read(info)
        except ArtifactError:
            raise
        except Exception as error:  # zlib.error, BadZipFile (CRC), struct.error from a damaged member
            raise self.error(
                f"is corrupted: '{name}' cannot be read ({type(error).__name__}: {error})"
            ) from None
        return self._parse(name, memoryview(data), 0, len(data))

    def _mapped(self, name: str, info: zipfile.ZipInfo) -> np.ndarray:
        assert self._map is not None
        start = info.header_offset
        if start + _LOCAL_HEADER.size > len(self._map):
            raise self.error(f"is truncated: '{name}' lies past the end of the file")
        fields = _LOCAL_HEADER.unpack_from(self._map, start)
        if fields[0] != _LOCAL_SIGNATURE:
            raise self.error(f"is corrupted: '{name}' has no local zip header")
        data_start = start + _LOCAL_HEADER.size + fields[-2] + fields[-1]
        if data_start + info.file_size > len(self._map):
            raise self.error(f"is truncated: '{name}' lies past the end of the file")
        return self._parse(name, memoryview(self._map), data_start, info.file_size)

    def _header(self, name: str, info: zipfile.ZipInfo) -> tuple[np.dtype[Any], tuple[int, ...], int]:
        """(dtype, shape, header length) of a member, reading only its first bytes."""
        try:
            if info.compress_type == zipfile.ZIP_STORED and self._map is not None:
                array = self._mapped(name, info)
                return array.dtype, array.shape, 0
            assert self._archive is not None
            with self._lock, self._archive.open(info) as member:
                head = member.read(min(info.file_size, 128))
                if len(head) >= 12 and head[6] == 1:
                    head += member.read(
                        min(info.file_size, struct.unpack_from("<H", head, 8)[0] + 10) - len(head)
                    )
        except ArtifactError:
            raise
        except Exception as error:
            raise self.error(
                f"is corrupted: '{name}' cannot be read ({type(error).__name__}: {error})"
            ) from None
        return _npy_header(self, name, memoryview(head), 0, len(head))

    def _parse(self, name: str, buffer: memoryview, start: int, size: int) -> np.ndarray:
        dtype, shape, header_length = _npy_header(self, name, buffer, start, size)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count * dtype.itemsize != size - header_length:
            raise self.error(f"is corrupted: '{name}' holds {size - header_length} bytes for shape {shape}")
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=start + header_length)
        return array.reshape(shape)

    def _scalar_text(self, name: str) -> str:
        if name not in self._members:
            raise self.error(f"lacks the array '{name}'")
        array = self[name]
        if array.shape != () or array.dtype.kind != "U":
            raise self.error(f"is corrupted: '{name}' must be a text scalar")
        return str(array)

    def _scalar_int(self, name: str) -> int:
        if name not in self._members:
            raise self.error(f"lacks the array '{name}'")
        array = self[name]
        if array.shape != () or array.dtype.kind not in "iu":
            raise self.error(f"is corrupted: '{name}' must be an integer scalar")
        return int(array)


def _npy_header(
    owner: ArtifactFile, name: str, buffer: memoryview, start: int, size: int
) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    """Parse the ``.npy`` header at ``buffer[start:]``: (dtype, shape, header length). Object
    dtypes, Fortran order and malformed headers are refused."""
    head = bytes(buffer[start : start + min(size, 12)])
    if len(head) < 10 or head[:6] != _NPY_MAGIC:
        raise owner.error(f"is corrupted: '{name}' is not a .npy array")
    major = head[6]
    if major == 1:
        length, prefix = struct.unpack_from("<H", head, 8)[0], 10
    elif major in (2, 3) and len(head) >= 12:
        length, prefix = struct.unpack_from("<I", head, 8)[0], 12
    else:
        raise owner.error(f"is corrupted: '{name}' has an unknown .npy version {major}")
    if prefix + length > size or length > 1 << 16:
        raise owner.error(f"is corrupted: '{name}' has a truncated .npy header")
    text = bytes(buffer[start + prefix : start + prefix + length]).decode("latin1")
    try:
        simple = _SIMPLE_HEADER.match(text)  # what numpy writes; anything else goes the slow way
        if simple is not None:
            descr, fortran_text, shape_text = simple.groups()
            dtype = np.dtype(descr)
            shape = tuple(int(n) for n in shape_text.replace(" ", "").split(",") if n)
            fortran = fortran_text == "True"
        else:
            header = ast.literal_eval(text)
            dtype = np.dtype(header["descr"])
            shape = tuple(int(n) for n in header["shape"])
            fortran = bool(header["fortran_order"])
    except Exception:
        raise owner.error(f"is corrupted: '{name}' has a malformed .npy header") from None
    if dtype.hasobject or dtype.kind not in "biufU" or fortran or any(n < 0 for n in shape):
        raise owner.error(f"is corrupted: '{name}' must be a C-ordered numeric or text array")
    return dtype, shape, prefix + length


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

_METADATA_TYPES: dict[str, type | tuple[type, ...]] = {
    "kind": str,
    "source": str,
    "source_name": (str, type(None)),
    "options": dict,
    "notes": dict,
    "warnings": list,
    "grammar": str,
    "grammar_truncated": bool,
    "compiler": str,
    "core": str,
    "token_table_core": str,
    "timings": dict,
    "vocabulary": dict,
}
_VOCABULARY_TYPES: dict[str, type] = {"name": str, "size": int, "eos_id": int, "fingerprint": str}


def check_metadata(text: str, owner: ArtifactFile | None = None) -> dict[str, Any]:
    """The metadata object, checked: a JSON object whose known keys have their types."""

    def fail(message: str) -> ArtifactError:
        return owner.error(message) if owner is not None else ArtifactError(message)

    try:
        metadata = json.loads(text)
    except ValueError:
        raise fail("is corrupted: its metadata is not JSON") from None
    if not isinstance(metadata, dict):
        raise fail("is corrupted: its metadata is not a JSON object")
    for key, expected in _METADATA_TYPES.items():
        if key in metadata and not isinstance(metadata[key], expected):
            raise fail(f"is corrupted: metadata '{key}' has the wrong type")
    vocabulary = metadata.get("vocabulary")
    if vocabulary is not None:
        for key, kind in _VOCABULARY_TYPES.items():
            if not isinstance(vocabulary.get(key), kind) or isinstance(vocabulary.get(key), bool):
                raise fail(f"is corrupted: metadata 'vocabulary' lacks a valid '{key}'")
    timings = metadata.get("timings", {})
    if not all(isinstance(value, int | float) for value in timings.values()):
        raise fail("is corrupted: metadata 'timings' holds something other than numbers")
    return metadata


class ArrayChecker:
    """Checks on one file's arrays that name the file and the array in their error."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, name: str, problem: str) -> ArtifactError:
        return ArtifactError(f"{self.where} is corrupted: '{name}' {problem}")

    def array(
        self,
        name: str,
        array: np.ndarray,
        kinds: str,
        shape: tuple[int | None, ...],
        low: int | None = None,
        high: int | None = None,
    ) -> np.ndarray:
        """``array`` when its dtype kind is in ``kinds``, its shape matches (``None`` = any) and
        every value lies in ``[low, high)``."""
        if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds:
            shown = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
            raise self.fail(name, f"has dtype {shown}, expected one of kind '{kinds}'")
        if len(array.shape) != len(shape) or any(
            want is not None and have != want for have, want in zip(array.shape, shape, strict=True)
        ):
            raise self.fail(name, f"has shape {array.shape}, expected {shape}")
        if array.size and low is not None and int(array.min()) < low:
            raise self.fail(name, f"holds {int(array.min())}, below {low}")
        if array.size and high is not None and int(array.max()) >= high:
            raise self.fail(name, f"holds {int(array.max())}, not below {high}")
        return array

    def scalar(self, name: str, array: np.ndarray, low: int, high: int) -> int:
        return int(self.array(name, array, "iu", (), low, high))

    def start(self, array: np.ndarray, states: int) -> int:
        """``dfa_start`` of a DFA of ``states`` states: 1, the first number after the dead state 0 in
        a numbering breadth first from the start, or 0 when the dead state is the only state (the
        empty language). Any other in-range value is a corrupted file."""
        start = self.scalar("dfa_start", array, 0, states)
        expected = 1 if states > 1 else 0
        if start != expected:
            raise self.fail(
                "dfa_start",
                f"is {start}, but a DFA numbered breadth first from its start state starts at "
                f"{expected} (1, or 0 when the dead state 0 is its only state)",
            )
        return start


def check_region_counts(arrays: Mapping[str, np.ndarray], vocab_size: int, where: str) -> np.ndarray:
    """``tokens_region_counts`` (format 4) as int16[roles, vocab_size]: a count per role and
    token, between 0 and the token's length in bytes (a character is one byte at least); the
    roles those of ``dfa_role``."""
    check = ArrayChecker(where)
    counts = check.array(
        REGION_COUNTS_ARRAY, arrays[REGION_COUNTS_ARRAY], "i", (None, vocab_size), 0, 1 << 15
    )
    if "dfa_role" in arrays and counts.shape[0] != int(np.asarray(arrays["dfa_role"]).max(initial=-1)) + 1:
        raise check.fail(REGION_COUNTS_ARRAY, "does not have one row per role of the counted regions")
    lengths = np.asarray(arrays["vocab_token_lengths"], dtype=np.int64)
    if lengths.shape != (vocab_size,) or np.any(counts > lengths[None, :]):
        raise check.fail(REGION_COUNTS_ARRAY, "counts more characters than a token has bytes")
    return np.ascontiguousarray(counts, dtype=np.int16)


def check_mask_arrays(arrays: Mapping[str, np.ndarray], rows: int, vocab_size: int, where: str) -> None:
    """The delta-coded mask rows of a vocabulary of ``vocab_size`` tokens: each row's base is an
    earlier row (or -1, the empty row), at most ``MAX_DELTA_DEPTH`` copies deep; offsets rise from
    0 to the number of replaced words; every replaced word lies inside the row and sets no bit past
    the last token (a mask would allow a token that does not exist)."""
    check = ArrayChecker(where)
    words = (vocab_size + 31) // 32
    base = check.array("tokens_mask_base", arrays["tokens_mask_base"], "i", (rows,), -1, max(rows, 1))
    if rows and bool(np.any(base >= np.arange(rows))):
        raise check.fail("tokens_mask_base", "names a row that is not earlier")
    offsets = check.array("tokens_mask_delta_offsets", arrays["tokens_mask_delta_offsets"], "i", (rows + 1,))
    if int(offsets[0]) != 0 or bool(np.any(offsets[1:] < offsets[:-1])):
        raise check.fail("tokens_mask_delta_offsets", "must rise from 0")
    total = int(offsets[-1])
    index = check.array(
        "tokens_mask_delta_index", arrays["tokens_mask_delta_index"], "iu", (total,), 0, words
    )
    value = check.array("tokens_mask_delta_value", arrays["tokens_mask_delta_value"], "u", (total,))
    if value.dtype.itemsize != 4:
        raise check.fail("tokens_mask_delta_value", "must be uint32")
    used_bits = vocab_size - 32 * (words - 1)
    if total and used_bits < 32:
        past = np.uint32((0xFFFFFFFF << used_bits) & 0xFFFFFFFF)
        if bool(np.any(value[index == words - 1] & past)):
            raise check.fail("tokens_mask_delta_value", f"sets a bit past the last token ({vocab_size - 1})")
    depth = _delta_depths(base)
    if rows and int(depth.max()) > MAX_DELTA_DEPTH:
        raise check.fail("tokens_mask_base", f"chains rows more than {MAX_DELTA_DEPTH} deep")


def check_next_arrays(
    arrays: Mapping[str, np.ndarray], state_row: np.ndarray, rows: int, classes: int, where: str
) -> None:
    """The compact next states (``NEXT_ARRAYS``) of a table whose ``state_row`` (checked: values
    below ``rows``, the dead state 0 on row 0) is given and whose tokens fall in ``classes``
    classes: row class offsets rise from 0 to the number of row classes; each row's classes are
    ascending, in ``1:classes`` (class 0 is never allowed) and the dead state's row 0 has none;
    each state has as many next states as its row has classes; every next state lies in
    ``1:states``. ``ArtifactError`` naming the array otherwise."""
    check = ArrayChecker(where)
    states = len(state_row)
    row_offsets = check.array(
        "tokens_row_class_offsets", arrays["tokens_row_class_offsets"], "i", (rows + 1,), 0, None
    )
    if int(row_offsets[0]) != 0 or bool(np.any(row_offsets[1:] < row_offsets[:-1])):
        raise check.fail("tokens_row_class_offsets", "must rise from 0")
    total = int(row_offsets[-1])
    row_classes = check.array(
        "tokens_row_classes", arrays["tokens_row_classes"], "iu", (total,), 1, max(classes, 1)
    )
    if rows and int(row_offsets[1]) != 0:
        raise check.fail("tokens_row_class_offsets", "gives the dead state's row 0 some classes")
    if total > 1:
        rising = row_classes[1:].astype(np.int64) > row_classes[:-1]
        starts = row_offsets[1:-1]
        rising[starts[(starts > 0) & (starts < total)] - 1] = True  # a new row may start lower
        if not rising.all():
            raise check.fail("tokens_row_classes", "lists a row's classes out of ascending order")
    next_offsets = check.array(
        "tokens_next_offsets", arrays["tokens_next_offsets"], "i", (states + 1,), 0, None
    )  # (no value below 0: the differences below cannot wrap around)
    counts = np.diff(row_offsets)
    if int(next_offsets[0]) != 0 or not np.array_equal(
        np.diff(next_offsets), counts[np.asarray(state_row, dtype=np.intp)]
    ):
        raise check.fail(
            "tokens_next_offsets", "does not give every state as many next states as its row has classes"
        )
    check.array("tokens_next", arrays["tokens_next"], "iu", (int(next_offsets[-1]),), 1, max(states, 1))


# ---------------------------------------------------------------------------------------------
# Mask rows as deltas
# ---------------------------------------------------------------------------------------------


def _delta_depths(base: np.ndarray) -> np.ndarray:
    """How many copies deep each row is (0 for a row built from the empty row), by relaxation over
    ``MAX_DELTA_DEPTH + 1`` rounds (bases are earlier rows); a deeper chain shows as a larger value."""
    depth = np.zeros(len(base), dtype=np.int64)
    for _ in range(MAX_DELTA_DEPTH + 1):
        depth = np.where(base >= 0, depth[np.maximum(base, 0)] + 1, 0)
    return depth


def encode_mask_rows(mask_rows: np.ndarray) -> dict[str, np.ndarray]:
    """The delta arrays of ``mask_rows`` (uint32[rows, words]). Each row's base is the empty row or
    one of the ``DELTA_WINDOW`` rows before it, at most ``MAX_DELTA_DEPTH`` copies deep, whichever
    leaves the fewest words to replace (greedily, row by row)."""
    rows, words = mask_rows.shape
    window = max(0, min(DELTA_WINDOW, rows - 1))
    costs = np.full((rows, window + 1), np.iinfo(np.int64).max, dtype=np.int64)
    costs[:, 0] = np.count_nonzero(mask_rows, axis=1)
    for back in range(1, window + 1):
        costs[back:, back] = np.count_nonzero(mask_rows[back:] != mask_rows[:-back], axis=1)
    order = np.argsort(costs, axis=1, kind="stable").tolist()
    base = np.full(rows, -1, dtype=np.int32)
    depth = [0] * rows
    for row in range(rows):
        for back in order[row]:
            if back == 0:
                break
            candidate = row - back
            if candidate >= 0 and depth[candidate] < MAX_DELTA_DEPTH:
                base[row], depth[row] = candidate, depth[candidate] + 1
                break
    base_rows = np.where(base[:, None] >= 0, mask_rows[np.maximum(base, 0)], 0).astype(np.uint32)
    changed_row, changed_word = np.nonzero(mask_rows != base_rows)
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(changed_row, minlength=rows), out=offsets[1:])
    index_dtype = np.uint16 if words <= 1 << 16 else np.uint32
    return {
        "tokens_mask_base": base,
        "tokens_mask_delta_offsets": offsets,
        "tokens_mask_delta_index": changed_word.astype(index_dtype),
        "tokens_mask_delta_value": mask_rows[changed_row, changed_word].astype(np.uint32),
    }


class MaskRows:
    """Delta-coded mask rows served one row at a time: ``rows[r]`` is uint32[words] (read-only),
    built from its base on first use and kept. ``full()`` builds every row at once."""

    def __init__(self, arrays: Mapping[str, np.ndarray], words: int) -> None:
        self._base = arrays["tokens_mask_base"].tolist()
        self._offsets: list[int] = arrays["tokens_mask_delta_offsets"].tolist()
        self._index = arrays["tokens_mask_delta_index"]
        self._value = arrays["tokens_mask_delta_value"]
        self._rows: list[np.ndarray | None] = [None] * len(self._base)
        self.shape = (len(self._base), words)
        self._empty = np.zeros(words, dtype=np.uint32)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, row: int) -> np.ndarray:
        found = self._rows[row]
        if found is None:
            chain = [row]  # the row, then its bases up to a built row or the empty row
            base = self._base[row]
            while base >= 0 and self._rows[base] is None:
                chain.append(base)
                base = self._base[base]
            built = self._rows[base] if base >= 0 else None
            out = self._empty.copy() if built is None else built.copy()
            offsets, index, value = self._offsets, self._index, self._value
            for step in reversed(chain):  # the deltas from the farthest base to the row itself
                low, high = offsets[step], offsets[step + 1]
                out[index[low:high]] = value[low:high]
            out.flags.writeable = False
            self._rows[row] = found = out
        return found

    def warm(self) -> None:
        """Build every row now (one vectorised pass), so that no later use pays for building one."""
        if any(row is None for row in self._rows):
            for row, built in enumerate(self.full()):
                if self._rows[row] is None:
                    built.flags.writeable = False
                    self._rows[row] = built

    def full(self) -> np.ndarray:
        """uint32[rows, words]: every row."""
        rows, words = self.shape
        out = np.zeros((rows, words), dtype=np.uint32)
        base = np.asarray(self._base, dtype=np.int64)
        counts: np.ndarray = np.diff(np.asarray(self._offsets, dtype=np.int64)).astype(np.int64)
        owner = np.repeat(np.arange(rows), counts)
        depth = _delta_depths(base)
        owner_depth = depth[owner]  # (a lookup per entry, where np.isin sorted them each level)
        index, value = np.asarray(self._index), np.asarray(self._value)
        for level in range(int(depth.max(initial=0)) + 1):  # bases are built before their rows
            at_level = np.flatnonzero(depth == level)
            with_base = at_level[base[at_level] >= 0]
            out[with_base] = out[base[with_base]]
            entries = owner_depth == level
            out[owner[entries], index[entries]] = value[entries]
        return out
