"""Local ``$ref`` resolution: JSON pointers, ``$defs`` / ``definitions``, ``$anchor``, own ``$id``.

Takes: the root schema. Hands on: ``RefResolver.resolve(ref, where) -> (pointer, subschema)``; the
pointer (``#/...``) names the target so that the walker can count how deep a recursive reference
is unrolled. Remote references (another document) raise ``UnsupportedError``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from moonmaskc.errors import UnsupportedError


def pointer_child(pointer: str, *parts: str | int) -> str:
    out = pointer
    for part in parts:
        out += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return out


class RefResolver:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.anchors: dict[str, tuple[str, Any]] = {}
        self.ids: dict[str, tuple[str, Any]] = {}
        self._index(root, "#")

    def _index(self, node: Any, pointer: str) -> None:
        if isinstance(node, dict):
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self.anchors.setdefault(anchor, (pointer, node))
            ident = node.get("$id", node.get("id"))
            if isinstance(ident, str):
                if ident.startswith("#") and len(ident) > 1:
                    self.anchors.setdefault(ident[1:], (pointer, node))
                else:
                    self.ids.setdefault(ident.rstrip("#"), (pointer, node))
            for key, value in node.items():
                if key in ("enum", "const", "examples", "default"):
                    continue
                self._index(value, pointer_child(pointer, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self._index(value, pointer_child(pointer, i))

    def resolve(self, ref: str, where: str) -> tuple[str, Any]:
        base, _, fragment = ref.partition("#")
        if base:
            if base not in self.ids:
                raise UnsupportedError(f"$ref {ref!r}", "remote references are not fetched", where=where)
            pointer, document = self.ids[base]
        else:
            pointer, document = "#", self.root
        if not fragment:
            return pointer, document
        if not fragment.startswith("/"):
            if fragment in self.anchors:
                return self.anchors[fragment]
            raise UnsupportedError(f"$ref {ref!r}", f"no $anchor named {fragment!r}", where=where)
        node = document
        for raw in fragment[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise UnsupportedError(
                    f"$ref {ref!r}", "the pointer leads nowhere in this document", where=where
                )
            pointer = pointer_child(pointer, part)
        return pointer, node
