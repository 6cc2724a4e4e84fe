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
        self.duplicate_anchors: set[str] = set()
        self.embedded_resources: list[str] = []
        self._index(root, "#")

    def _add_anchor(self, name: str, pointer: str, node: Any) -> None:
        if name in self.anchors and self.anchors[name][0] != pointer:
            self.duplicate_anchors.add(name)
        self.anchors.setdefault(name, (pointer, node))

    def _index(self, node: Any, pointer: str) -> None:
        if isinstance(node, dict):
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self._add_anchor(anchor, pointer, node)
            ident = node.get("$id", node.get("id"))
            if isinstance(ident, str):
                if ident.startswith("#") and len(ident) > 1:
                    self._add_anchor(ident[1:], pointer, node)
                else:
                    if pointer != "#":
                        self.embedded_resources.append(pointer)
                    self.ids.setdefault(ident.rstrip("#"), (pointer, node))
            for key, value in node.items():
                if key in ("enum", "const", "examples", "default"):
                    continue
                self._index(value, pointer_child(pointer, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self._index(value, pointer_child(pointer, i))

    def resolve(self, ref: str, where: str) -> tuple[str, Any]:
        if self.embedded_resources:
            raise UnsupportedError(
                f"$ref {ref!r}",
                "the document embeds resources with their own base URI "
                f"($id at {self.embedded_resources[0]}); "
                "references are resolved only against one base",
                where=where,
            )
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
            if fragment in self.duplicate_anchors:
                raise UnsupportedError(f"$ref {ref!r}", "the anchor is defined more than once", where=where)
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
