"""Local ``$ref`` resolution: JSON pointers, ``$defs`` / ``definitions``, ``$anchor``, ``$id``.

Takes: the root schema. Hands on: ``RefResolver.resolve(ref, where) -> (pointer, subschema)``; the
pointer (``#/...``, from the document's root) names the target so that the walker can count how
deep a recursive reference is unrolled. A reference is resolved against the base URI in scope
where it stands (``$id``, or draft-04 ``id``, of the enclosing schemas joined from the root
down), so a schema that embeds resources with their own ``$id`` resolves each reference in its
own resource. References to another document raise ``UnsupportedError``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urljoin

from moonmaskc.errors import UnsupportedError


def pointer_child(pointer: str, *parts: str | int) -> str:
    out = pointer
    for part in parts:
        out += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return out


class RefResolver:
    def __init__(
        self,
        root: Any,
        ref_overrides_siblings: bool | None = None,
        id_keywords: tuple[str, ...] = ("$id", "id"),
    ) -> None:
        """``ref_overrides_siblings``: whether an ``$id`` beside a ``$ref`` is ignored (draft-07 and
        older: ``True``) or sets the base the ``$ref`` resolves against (later drafts: ``False``);
        ``None`` when the document declares no draft, where such an ``$id`` is refused when a
        reference depends on it. ``id_keywords``: what names a schema's base URI, ``id`` up to
        draft-04, ``$id`` since draft-06 (either when no draft is declared)."""
        self.root = root
        self.ref_overrides_siblings = ref_overrides_siblings
        self.id_keywords = id_keywords
        self.anchors: dict[str, tuple[str, Any]] = {}
        self.ids: dict[str, tuple[str, Any]] = {}  # absolute resource URI -> (pointer, schema)
        self.duplicate_anchors: set[str] = set()
        root_id = self._own_id(root)
        self.root_base = _joined("", root_id) if root_id and not root_id.startswith("#") else ""
        self._index(root, "#", self.root_base)
        # Whether a schema below the root has a base URI of its own.
        self.has_embedded_resources = any(pointer != "#" for pointer, _ in self.ids.values())

    def _add_anchor(self, name: str, pointer: str, node: Any) -> None:
        if name in self.anchors and self.anchors[name][0] != pointer:
            self.duplicate_anchors.add(name)
        self.anchors.setdefault(name, (pointer, node))

    def _index(self, node: Any, pointer: str, base: str) -> None:
        if isinstance(node, dict):
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self._add_anchor(anchor, pointer, node)
            ident = self._effective_id(node)
            if ident is not None and ident.startswith("#"):
                if len(ident) > 1:
                    self._add_anchor(ident[1:], pointer, node)
            elif ident is not None:
                base = _joined(base, ident)
                self.ids.setdefault(base, (pointer, node))
            for key, value in node.items():
                if key in ("enum", "const", "examples", "default"):
                    continue
                self._index(value, pointer_child(pointer, key), base)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self._index(value, pointer_child(pointer, i), base)

    def _own_id(self, node: Any) -> str | None:
        """A schema's ``$id`` (or draft-04 ``id``) when it is a string."""
        if not isinstance(node, dict):
            return None
        for keyword in self.id_keywords:
            ident = node.get(keyword)
            if isinstance(ident, str):
                return ident
        return None

    def _effective_id(self, node: Any) -> str | None:
        """``_own_id``, unless a ``$ref`` beside it overrides it (draft-07 and older)."""
        ident = self._own_id(node)
        if ident is not None and "$ref" in node and self.ref_overrides_siblings:
            return None
        return ident

    def base_at(self, where: str) -> str:
        """The base URI in scope at the schema that ``where`` points to."""
        base, node, pointer = self.root_base, self.root, "#"
        for raw in where.removeprefix("#").split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                break
            pointer = pointer_child(pointer, part)
            ident = self._effective_id(node)
            if ident is None or ident.startswith("#"):
                continue
            if "$ref" in node and self.ref_overrides_siblings is None:
                raise UnsupportedError(
                    "$id beside $ref",
                    "draft-07 and older ignore it, later drafts resolve the $ref against it; "
                    "declare the draft with $schema",
                    where=pointer,
                )
            base = _joined(base, ident)
        return base

    def resolve(self, ref: str, where: str) -> tuple[str, Any]:
        uri, _, fragment = _joined(self.base_at(where), ref).partition("#")
        if uri in self.ids:
            pointer, document = self.ids[uri]
        elif uri == self.root_base:
            pointer, document = "#", self.root
        else:
            raise UnsupportedError(f"$ref {ref!r}", "remote references are not fetched", where=where)
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


def _joined(base: str, reference: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986), without an empty fragment; a fragment
    alone stays in ``base``'s document whatever its scheme (``urljoin`` knows no ``urn:``)."""
    if reference.startswith("#"):
        joined = base.partition("#")[0] + reference
    else:
        joined = urljoin(base, reference) if base else reference
    return joined.removesuffix("#")
