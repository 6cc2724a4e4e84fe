"""The on-disk cache of parsed vocabularies and tries.

Takes: a kind (``"vocabulary"``, ``"trie"``), a hex key, and numeric arrays.
Hands on: ``.npz`` files under ``$MOONMASKC_CACHE`` (default ``~/.cache/moonmaskc``), written
atomically (temporary file, then rename), read back with ``allow_pickle=False``. A file that cannot
be read, or whose stored SHA-256 checksum of its arrays does not match, is reported as a miss
(``None``) and is overwritten by the caller's rebuild: a cache file is never trusted. A cache
folder that cannot be written is ignored: caching is an optimisation, never a reason to fail.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

CACHE_FORMAT_VERSION = 1
CHECKSUM_NAME = "cache_checksum"


def cache_dir() -> Path:
    """``$MOONMASKC_CACHE``, else ``~/.cache/moonmaskc``."""
    configured = os.environ.get("MOONMASKC_CACHE")
    return Path(configured).expanduser() if configured else Path("~/.cache/moonmaskc").expanduser()


def cache_path(kind: str, key: str) -> Path:
    return cache_dir() / f"{kind}-v{CACHE_FORMAT_VERSION}-{key}.npz"


def read_cached_arrays(path: Path) -> dict[str, np.ndarray] | None:
    """All arrays of a cache file, or ``None`` when it is absent or unreadable."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
        return None
    stored = arrays.pop(CHECKSUM_NAME, None)
    if stored is None or stored.shape != () or str(stored) != arrays_checksum(arrays):
        return None
    return arrays


def arrays_checksum(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the names, dtypes, shapes and contents of ``arrays``."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}\x00{array.dtype.str}\x00{array.shape}\x00".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def write_cached_arrays(path: Path, arrays: dict[str, np.ndarray]) -> bool:
    """Write ``arrays`` to ``path`` atomically; ``False`` when the cache folder is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **arrays, **{CHECKSUM_NAME: np.array(arrays_checksum(arrays))})  # type: ignore[arg-type]
        os.replace(temporary, path)
        return True
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
