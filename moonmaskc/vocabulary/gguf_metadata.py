"""The key/value metadata of a GGUF file (llama.cpp's model format), read with the standard library.

Takes: a path to a ``.gguf`` file and the keys wanted. Hands on: ``{key: value}`` for those keys
(strings as ``str``, numbers as ``int``/``float``/``bool``, arrays as lists). Tensors are never read:
only the header and the metadata section, through a memory map.

Why not ``gguf.GGUFReader``: it parses every tensor description and turns each metadata array item
into its own numpy view, which takes about 9 s for SmolLM2's 49,152 tokens and 48,900 merges;
this reader takes a fraction of a second. The tests check it against ``gguf.GGUFReader``.

Layout (GGUF v2 and v3, little- or big-endian): ``b"GGUF"``, uint32 version, uint64 tensor count,
uint64 key/value count, then per pair: a string key (uint64 length + UTF-8 bytes), a uint32 value
type and the value; an array is a uint32 item type, a uint64 count and the items.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from moonmaskc.errors import VocabularyError

__all__ = ["read_gguf_metadata"]

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
STRING_TYPE = 8
ARRAY_TYPE = 9
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf_metadata(path: str | os.PathLike[str], keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The metadata values of ``keys`` (all keys when ``None``) in the GGUF file at ``path``;
    keys absent from the file are absent from the result."""
    file = Path(path).expanduser()
    try:
        with open(file, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _MetadataParser(data, str(file)).parse(None if keys is None else set(keys))
    except (OSError, ValueError) as error:
        raise VocabularyError(f"cannot read GGUF file {file}: {error}") from None


class _MetadataParser:
    def __init__(self, data: mmap.mmap, where: str) -> None:
        self.data = data
        self.where = where
        self.offset = 0
        self.order = "<"

    def parse(self, wanted: set[str] | None) -> dict[str, Any]:
        try:
            return self._parse(wanted)
        except (struct.error, UnicodeDecodeError, IndexError) as error:
            raise VocabularyError(f"{self.where} is truncated or corrupted GGUF ({error})") from None

    def _parse(self, wanted: set[str] | None) -> dict[str, Any]:
        if self.data[:4] != GGUF_MAGIC:
            raise VocabularyError(f"{self.where} is not a GGUF file (no GGUF magic)")
        self.offset = 4
        version = self._scalar("I")
        if version not in SUPPORTED_VERSIONS:
            swapped = struct.unpack(">I", struct.pack("<I", version))[0]
            if swapped not in SUPPORTED_VERSIONS:
                raise VocabularyError(f"{self.where}: GGUF version {version} is not supported (2 and 3 are)")
            self.order = ">"
        self._scalar("Q")  # tensor count: the tensors are not read
        pairs = self._scalar("Q")
        values: dict[str, Any] = {}
        for _ in range(pairs):
            key = self._string()
            value_type = self._scalar("I")
            if wanted is None or key in wanted:
                values[key] = self._value(value_type)
            else:
                self._skip(value_type)
        return values

    def _scalar(self, code: str) -> Any:
        layout = struct.Struct(self.order + code)
        (value,) = layout.unpack_from(self.data, self.offset)
        self.offset += layout.size
        return value

    def _string(self) -> str:
        length = self._scalar("Q")
        end = self.offset + length
        if end > len(self.data):
            raise VocabularyError(f"{self.where} is truncated GGUF (a string runs past the end)")
        text = self.data[self.offset : end].decode("utf-8")
        self.offset = end
        return text

    def _value(self, value_type: int) -> Any:
        if value_type in SCALAR_FORMATS:
            return self._scalar(SCALAR_FORMATS[value_type])
        if value_type == STRING_TYPE:
            return self._string()
        if value_type == ARRAY_TYPE:
            item_type = self._scalar("I")
            count = self._scalar("Q")
            if item_type in SCALAR_FORMATS:
                layout = struct.Struct(f"{self.order}{count}{SCALAR_FORMATS[item_type]}")
                items = list(layout.unpack_from(self.data, self.offset))
                self.offset += layout.size
                return items
            return [self._value(item_type) for _ in range(count)]
        raise VocabularyError(f"{self.where}: unknown GGUF value type {value_type}")

    def _skip(self, value_type: int) -> None:
        if value_type in SCALAR_FORMATS:
            self.offset += struct.calcsize(self.order + SCALAR_FORMATS[value_type])
        elif value_type == STRING_TYPE:
            length = self._scalar("Q")
            self.offset += length
        elif value_type == ARRAY_TYPE:
            item_type = self._scalar("I")
            count = self._scalar("Q")
            if item_type in SCALAR_FORMATS:
                self.offset += count * struct.calcsize(self.order + SCALAR_FORMATS[item_type])
            else:
                for _ in range(count):
                    self._skip(item_type)
        else:
            raise VocabularyError(f"{self.where}: unknown GGUF value type {value_type}")
        if self.offset > len(self.data):
            raise VocabularyError(f"{self.where} is truncated GGUF (a value runs past the end)")
