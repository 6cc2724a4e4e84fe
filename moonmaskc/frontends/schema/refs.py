"""``$ref`` resolution: JSON pointers, ``$defs`` / ``definitions``, ``$anchor``, ``$id``, and other
documents read offline from local folders (``ref_roots``) or the official meta-schemas.

Takes: the root schema and the folders that URI prefixes map to. Hands on:
``RefResolver.resolve(ref, where) -> (pointer, subschema)``; the pointer names the target so that
the walker can count how deep a recursive reference is unrolled: ``#/...`` from the root document's
root, ``URI#/...`` in another document (``URI`` the absolute URI it was read for). A reference is
resolved against the base URI in scope where it stands (``$id``, or draft-04 ``id``, of the
enclosing schemas joined from the document's root down, starting from the URI a document was read
for), so a schema that embeds resources with their own ``$id`` resolves each reference in its own
resource, and an anchor belongs to the resource it stands in.

Another document is read, once, when a reference first needs it (``DocumentSource``): from the
folder of the longest ``ref_roots`` prefix of its URI (the rest of the URI, unquoted, a relative
path under the folder), else from the meta-schemas of the ``jsonschema_specifications`` package
(drafts 3 to 2020-12), else the reference is refused. Nothing is ever downloaded. A document that
declares its own ``$schema`` names its bases by that draft; otherwise it is read as the root is.
``check_keyword_shapes`` refuses a document (the root or one read here) where a keyword the walk
reads structurally (``required``, ``type``, ``$ref``, ``properties``, ``allOf``, a subschema ...)
has a value of the wrong shape, before any part of the walk reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any
from urllib.parse import unquote, urljoin

from moonmaskc.errors import LimitError, MoonmaskError, SourceError, UnsupportedError
from moonmaskc.frontends.schema.keywords import is_annotation

OLD_DRAFTS = ("draft-07", "draft-06", "draft-04", "draft-03")
# How many other documents one compile may read (a bound on a closure of references).
MAX_DOCUMENTS = 1000
NOT_FETCHED = "remote references are not fetched"
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
"""Keywords whose value maps names to subschemas (the names are not keywords; a ``dependencies``
entry may also be a list of names)."""
# Where else a schema holds subschemas (beside ``SCHEMA_MAPS``): lists of them, one of them.
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_VALUES = frozenset(
    {
        "additionalProperties",
        "items",
        "additionalItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contentSchema",
    }
)


DATA_KEYWORDS = frozenset(("enum", "const", "default", "examples"))
"""Keywords whose values are instances, not schemas: scans for ``$ref`` / ``$id`` skip them."""


def pointer_child(pointer: str, *parts: str | int) -> str:
    out = pointer
    for part in parts:
        out += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return out


@dataclass(frozen=True)
class Dialect:
    """How a document names base URIs and reads an ``$id`` beside a ``$ref``:
    ``ref_overrides_siblings`` (draft-07 and older: ``True``; later drafts: ``False``; ``None``
    when no draft is declared) and ``id_keywords`` (``id`` up to draft-04, ``$id`` since draft-06,
    either when no draft is declared)."""

    ref_overrides_siblings: bool | None
    id_keywords: tuple[str, ...]


def declared_dialect(declared: Any) -> Dialect:
    """The dialect that a (non-empty) ``$schema`` value declares."""
    text = str(declared)
    old = any(d in text for d in OLD_DRAFTS)
    return Dialect(old, ("id",) if any(d in text for d in ("draft-04", "draft-03")) else ("$id",))


@dataclass
class Document:
    """A document read for ``uri``: its contents, base URI (``uri``, or its own root ``$id``
    resolved against it), dialect, and where it holds a ``$ref`` that its declared draft reads
    otherwise than the root's (``conflict``: a pointer, or None)."""

    uri: str
    contents: Any
    base: str
    dialect: Dialect
    declared: str
    conflict: str | None = None


class DocumentSource:
    """Where documents other than the root come from, offline: the local folders that ``ref_roots``
    maps URI prefixes to, then the official meta-schemas (``jsonschema_specifications``, when it is
    importable)."""

    def __init__(self, ref_roots: Mapping[str, str | os.PathLike[str]] | None = None) -> None:
        if ref_roots is not None and not isinstance(ref_roots, Mapping):
            raise TypeError("ref_roots must map URI prefixes to local folders, such as {PREFIX: DIR}")
        roots: list[tuple[str, str, Path]] = []
        for prefix, folder in (ref_roots or {}).items():
            if not isinstance(prefix, str) or not prefix:
                raise MoonmaskError(f"ref root {prefix!r}: a URI prefix is a non-empty string")
            shown = os.fspath(folder)
            if not Path(shown).is_dir():
                raise MoonmaskError(f"ref root {prefix}={shown}: {shown} is not a folder")
            roots.append((prefix, shown, Path(shown)))
        self.roots = sorted(roots, key=lambda root: -len(root[0]))  # the longest prefix wins

    def load(self, uri: str) -> Any:
        """The contents of the document at ``uri`` (absolute, no fragment), None when no source
        serves ``uri``. ``SourceError`` when a folder should hold it and cannot give it (a path
        that leaves the folder, no such file, not JSON, not a schema)."""
        for prefix, shown, folder in self.roots:
            if uri.startswith(prefix):
                return self._read(uri, prefix, shown, folder)
        return _meta_schema(uri)

    def _read(self, uri: str, prefix: str, shown: str, folder: Path) -> Any:
        rest = unquote(uri[len(prefix) :])
        root = f"--ref-root {prefix}={shown}"
        if not rest:
            raise SourceError(f"{uri} names the folder of {root} itself, not a file in it")
        parts = rest.replace("\\", "/").split("/")
        if (
            rest.startswith(("/", "\\"))
            or Path(rest).is_absolute()
            or (os.name == "nt" and PureWindowsPath(rest).drive)
            or ".." in parts
        ):
            raise SourceError(
                f"{uri} would be read from {rest!r} under {root}, a path that leaves the folder "
                "('..' or an absolute path): refused"
            )
        path = folder.joinpath(*[p for p in parts if p not in ("", ".")])
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise SourceError(
                f"{path} (read for {uri} through {root}) is not UTF-8 text (byte {error.start}: "
                f"{error.reason})"
            ) from None
        except (OSError, ValueError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise SourceError(
                f"{uri} maps to {path} through {root}, which cannot be read ({reason})"
            ) from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise SourceError(
                f"{path} (read for {uri} through {root}) is not valid JSON: {error.msg}", text, error.pos
            ) from None
        if not isinstance(value, (dict, bool)):
            raise SourceError(
                f"{path} (read for {uri} through {root}) holds a JSON {_json_kind(value)}, not a "
                "JSON Schema (an object or a boolean)"
            )
        check_keyword_shapes(value)
        return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "string" if isinstance(value, str) else "number"


def _meta_schema(uri: str) -> Any:
    """The official meta-schema (or vocabulary meta-schema) at ``uri``, None when there is none or
    ``jsonschema_specifications`` cannot be imported."""
    try:
        from jsonschema_specifications import REGISTRY
    except ImportError:
        return None
    resource = REGISTRY.get(uri)
    return None if resource is None else resource.contents


class RefResolver:
    def __init__(
        self,
        root: Any,
        ref_overrides_siblings: bool | None = None,
        id_keywords: tuple[str, ...] = ("$id", "id"),
        source: DocumentSource | None = None,
    ) -> None:
        """``ref_overrides_siblings``: whether an ``$id`` beside a ``$ref`` is ignored (draft-07 and
        older: ``True``) or sets the base the ``$ref`` resolves against (later drafts: ``False``);
        ``None`` when the document declares no draft, where such an ``$id`` is refused when a
        reference depends on it. ``id_keywords``: what names a schema's base URI, ``id`` up to
        draft-04, ``$id`` since draft-06 (either when no draft is declared). ``source``: where
        other documents are read (none by default: a reference to one is refused)."""
        self.root = root
        self.dialect = Dialect(ref_overrides_siblings, id_keywords)
        self.source = source if source is not None else DocumentSource()
        self.documents: dict[str, Document] = {}  # the URI a document was read for -> it
        # (resource base URI, anchor name) -> (pointer, schema)
        self.anchors: dict[tuple[str, str], tuple[str, Any]] = {}
        self.ids: dict[str, tuple[str, Any]] = {}  # absolute resource URI -> (pointer, schema)
        self.aliases: dict[str, str] = {}  # the URI a document was read for -> its own $id's
        self.duplicate_anchors: set[tuple[str, str]] = set()
        root_id = self._own_id(root, self.dialect)
        self.root_base = _joined("", root_id) if root_id and not root_id.startswith("#") else ""
        self._index(root, "#", self.root_base, self.dialect)
        self._embedded = any(pointer != "#" for pointer, _ in self.ids.values())
        # id(schema) -> (its pointer, None where it stands twice; the schema), for ``pointer_of``.
        self._locations: dict[int, tuple[str | None, Any]] = {}
        self._locations_of: list[str] = []
        self._bases: dict[str, str] = {}  # pointer -> the base URI in scope there

    @property
    def has_embedded_resources(self) -> bool:
        """Whether a schema below the root, or in another document, has a base URI of its own."""
        return self._embedded or bool(self.documents)

    def _add_anchor(self, key: tuple[str, str], pointer: str, node: Any) -> None:
        if key in self.anchors and self.anchors[key][0] != pointer:
            self.duplicate_anchors.add(key)
        self.anchors.setdefault(key, (pointer, node))

    def _index(self, node: Any, pointer: str, base: str, dialect: Dialect) -> None:
        if isinstance(node, dict):
            ident = self._effective_id(node, dialect)
            if ident is not None and ident.startswith("#"):
                if len(ident) > 1:  # draft-07 and older: a plain-name $id is an anchor
                    self._add_anchor((base, ident[1:]), pointer, node)
            elif ident is not None:
                base = _joined(base, ident)
                self.ids.setdefault(base, (pointer, node))
            anchor = node.get("$anchor")
            if isinstance(anchor, str):  # of the resource the schema's own $id starts
                self._add_anchor((base, anchor), pointer, node)
            for key, value in node.items():
                if key in DATA_KEYWORDS or not isinstance(value, (dict, list)):
                    continue
                self._index(value, pointer_child(pointer, key), base, dialect)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                if isinstance(value, (dict, list)):
                    self._index(value, pointer_child(pointer, i), base, dialect)

    @staticmethod
    def _own_id(node: Any, dialect: Dialect) -> str | None:
        """A schema's ``$id`` (or draft-04 ``id``) when it is a string."""
        if not isinstance(node, dict):
            return None
        for keyword in dialect.id_keywords:
            ident = node.get(keyword)
            if isinstance(ident, str):
                return ident
        return None

    def _effective_id(self, node: Any, dialect: Dialect) -> str | None:
        """``_own_id``, unless a ``$ref`` beside it overrides it (draft-07 and older)."""
        ident = self._own_id(node, dialect)
        if ident is not None and "$ref" in node and dialect.ref_overrides_siblings:
            return None
        return ident

    def base_at(self, where: str) -> str:
        """The base URI in scope at the schema that ``where`` points to (kept per pointer: the
        documents a compile reads do not change)."""
        known = self._bases.get(where)
        if known is None:
            known = self._bases[where] = self._base_at(where)
        return known

    def _base_at(self, where: str) -> str:
        key, _, path = where.partition("#")
        if key:
            document = self.documents[key]
            base, node, dialect = document.base, document.contents, document.dialect
        else:
            base, node, dialect = self.root_base, self.root, self.dialect
        pointer = key + "#"
        for raw in path.split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                break
            pointer = pointer_child(pointer, part)
            ident = self._effective_id(node, dialect)
            if ident is None or ident.startswith("#"):
                continue
            if "$ref" in node and dialect.ref_overrides_siblings is None:
                raise UnsupportedError(
                    "$id beside $ref",
                    "draft-07 and older ignore it, later drafts resolve the $ref against it; "
                    "declare the draft with $schema",
                    where=pointer,
                )
            base = _joined(base, ident)
        return base

    def resolve_known(self, ref: str, where: str) -> tuple[str, Any] | None:
        """``resolve(ref, where)`` where its document is at hand (the root, or one read already);
        None where it would read another document or leads nowhere (nothing is read or raised)."""
        try:
            uri = _joined(self.base_at(where), ref).partition("#")[0]
            if uri not in self.ids and uri != self.root_base:
                return None
            return self.resolve(ref, where)
        except (MoonmaskError, KeyError, ValueError):
            return None

    def resolve(self, ref: str, where: str) -> tuple[str, Any]:
        uri, _, fragment = _joined(self.base_at(where), ref).partition("#")
        if uri in self.ids:
            pointer, document = self.ids[uri]
        elif uri == self.root_base:
            pointer, document = "#", self.root
        else:
            pointer, document = self._read(uri, ref, where)
        self._check_dialect(pointer, ref, where)
        if not fragment:
            return pointer, document
        if not fragment.startswith("/"):
            key = (self.aliases.get(uri, uri), fragment)
            if key in self.duplicate_anchors:
                raise UnsupportedError(f"$ref {ref!r}", "the anchor is defined more than once", where=where)
            if key in self.anchors:
                return self.anchors[key]
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

    # ------------------------------------------------------------------ other documents

    def _read(self, uri: str, ref: str, where: str) -> tuple[str, Any]:
        """The root of the document at ``uri``, read from the source and indexed."""
        if len(self.documents) >= MAX_DOCUMENTS:
            raise LimitError(
                "max_documents",
                MAX_DOCUMENTS,
                f"the references reach more than {MAX_DOCUMENTS} other documents (the next: {uri}, "
                f"for $ref {ref!r} at {where})",
            )
        try:
            found = self.source.load(uri)
        except SourceError as error:
            raise SourceError(
                f"$ref {ref!r} at {where}: {error.message}", error.source, error.position
            ) from None
        if found is None:
            raise UnsupportedError(
                f"$ref {ref!r}",
                f"{NOT_FETCHED}; to read {uri} from a local file, map a prefix of its URI to a "
                "folder with --ref-root PREFIX=DIR (ref_roots in Python)",
                where=where,
            )
        self._add_document(uri, found)
        return uri + "#", found

    def _add_document(self, uri: str, contents: Any) -> None:
        declared = contents.get("$schema", "") if isinstance(contents, dict) else ""
        dialect = declared_dialect(declared) if declared else self.dialect
        ident = self._effective_id(contents, dialect)
        base = _joined(uri, ident) if ident and not ident.startswith("#") else uri
        document = Document(uri, contents, base, dialect, str(declared))
        if declared and bool(dialect.ref_overrides_siblings) != bool(self.dialect.ref_overrides_siblings):
            # The walk reads a $ref beside other keywords by the root's draft.
            document.conflict = next(_refs_with_siblings(contents, uri + "#"), None)
        self.documents[uri] = document
        self.ids[uri] = (uri + "#", contents)
        if base != uri:
            self.aliases[uri] = base
        self._index(contents, uri + "#", uri, dialect)

    def _check_dialect(self, pointer: str, ref: str, where: str) -> None:
        """Refuse a target in a document whose declared draft reads one of its ``$ref``s otherwise
        than the walk does (by the root's draft)."""
        key = pointer.partition("#")[0]
        document = self.documents.get(key) if key else None
        if document is None or document.conflict is None:
            return
        root = "a draft-07 or older" if self.dialect.ref_overrides_siblings else "a later or no"
        raise UnsupportedError(
            f"$ref {ref!r}",
            f"{document.uri} declares $schema {document.declared!r}, which reads the $ref beside "
            f"other keywords at {document.conflict} otherwise than the root schema's {root} draft "
            "(every document is read by the root's draft); declare the same draft in both",
            where=where,
        )

    def pointer_of(self, schema: Any) -> str | None:
        """Where ``schema`` (this very object) stands in the root or a document read, None when it
        stands nowhere (a view built by the walk) or in two places."""
        if len(self._locations_of) != len(self.documents) + 1:
            self._locations = {}
            self._locations_of = ["#", *self.documents]
            for key in self._locations_of:
                contents = self.root if key == "#" else self.documents[key].contents
                self._locate(contents, "#" if key == "#" else key + "#")
        found = self._locations.get(id(schema))
        return found[0] if found is not None and found[1] is schema else None

    def _locate(self, schema: Any, pointer: str) -> None:
        stack = [(schema, pointer)]
        while stack:
            node, at = stack.pop()
            if isinstance(node, dict):
                known = self._locations.get(id(node))
                self._locations[id(node)] = (at if known is None else None, node)
                stack.extend((v, pointer_child(at, k)) for k, v in node.items() if k not in DATA_KEYWORDS)
            elif isinstance(node, list):
                stack.extend((v, pointer_child(at, i)) for i, v in enumerate(node))

    def registry(self, default_specification: Any) -> Any:
        """A ``referencing.Registry`` (for jsonschema) that reads the documents this resolver reads,
        from the same sources: never from the network. ``default_specification``: the dialect of a
        document that declares none (the root's)."""
        from referencing import Registry, Resource
        from referencing.exceptions import NoSuchResource

        def retrieve(uri: str) -> Resource[Any]:
            document = self.documents.get(uri)
            if document is not None:
                contents = document.contents
            else:
                contents = self.source.load(uri)
                if contents is None:
                    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]
            return Resource.from_contents(contents, default_specification=default_specification)

        return Registry(retrieve=retrieve)  # type: ignore[call-arg]


def _refs_with_siblings(schema: Any, pointer: str) -> Iterator[str]:
    """The pointers of the schemas in ``schema`` that hold a ``$ref`` beside a keyword that is not
    an annotation (the names in ``properties`` and the like are not keywords)."""
    stack = [(schema, pointer)]
    while stack:
        node, at = stack.pop()
        if not isinstance(node, dict):
            continue
        if "$ref" in node and any(k != "$ref" and not is_annotation(k) for k in node):
            yield at
        for key, value in node.items():
            if key in DATA_KEYWORDS:
                continue
            if key in SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((v, pointer_child(at, key, k)) for k, v in value.items())
            elif isinstance(value, dict):
                stack.append((value, pointer_child(at, key)))
            elif isinstance(value, list):
                stack.extend((v, pointer_child(at, key, i)) for i, v in enumerate(value))


def check_keyword_shapes(root: Any) -> None:
    """Raise ``UnsupportedError`` (the keyword, and the pointer of its schema or of the dependency
    entry) where a schema of the document gives a keyword that the walk reads structurally a value
    of the wrong shape, before any part of the walk reads it: ``required`` neither an array of
    strings nor draft-03's boolean; ``type`` neither a type name nor an array of them (draft-03's
    schemas inside ``type`` included); ``$ref``, ``$id``, ``$anchor`` and the other identifiers not
    strings; ``properties``, ``patternProperties``, ``dependentSchemas``, ``dependencies``,
    ``dependentRequired``, ``$defs`` and ``definitions`` not objects; ``allOf``, ``anyOf``,
    ``oneOf``, ``prefixItems`` and ``enum`` not arrays; a subschema (beside the named ones of
    ``$defs`` / ``definitions``, which matter only once referenced) neither an object nor a
    boolean; a dependency neither a schema nor an array of names. Iterative; only the keywords that
    hold subschemas are entered, so that annotations and extension keywords (``x-*``) are never
    read as schemas."""
    stack: list[tuple[Any, str]] = [(root, "#")]
    while stack:
        schema, where = stack.pop()
        if not isinstance(schema, dict):
            continue
        for key in ("dependentRequired", "dependencies"):
            entries = schema.get(key)
            for name, item in entries.items() if isinstance(entries, dict) else ():
                if not _names(item) and (key == "dependentRequired" or not isinstance(item, dict | bool)):
                    raise UnsupportedError(
                        f"keyword {key!r}",
                        "each property must map to an array of property names"
                        + (" or a schema" if key == "dependencies" else "")
                        + f", not {_shown(item)}",
                        where=pointer_child(pointer_child(where, key), str(name)),
                    )
        for key, value in schema.items():
            problem = _shape_problem(key, value)
            if problem is not None:
                raise UnsupportedError(f"keyword {key!r}", f"{problem}, not {_shown(value)}", where=where)
        for key, value in schema.items():
            child = pointer_child(where, str(key))
            if key in SCHEMA_MAPS and isinstance(value, dict):
                for name, item in value.items():
                    place = pointer_child(child, str(name))
                    if key not in _NAMED_ONLY and not (key == "dependencies" and isinstance(item, list)):
                        _check_subschema(item, place)
                    stack.append((item, place))
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                for index, item in enumerate(value):
                    _check_subschema(item, f"{child}/{index}")
                    stack.append((item, f"{child}/{index}"))
            elif key in _SCHEMA_VALUES:
                if key != "items" or not isinstance(value, list):
                    _check_subschema(value, child)
                stack.append((value, child))


# Maps of subschemas that matter only where a reference reaches them (checked then).
_NAMED_ONLY = frozenset({"$defs", "definitions"})
_IDENTIFIERS = frozenset(
    {"$ref", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$schema"}
)
_OBJECTS = frozenset({*SCHEMA_MAPS, "dependentRequired"})
_ARRAYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "enum"})


def _shape_problem(key: str, value: Any) -> str | None:
    """What is wrong with the shape of ``value`` under ``key`` (see ``check_keyword_shapes``)."""
    if key == "required":
        if isinstance(value, bool) or _names(value):
            return None
        return "must be an array of strings (property names)"
    if key == "type":
        if isinstance(value, str) or _names(value):
            return None
        return (
            "must be a type name or an array of type names (draft-03's schemas in 'type' are not supported)"
        )
    if key in _IDENTIFIERS and not isinstance(value, str):
        return "must be a string"
    if key in _OBJECTS and not isinstance(value, dict):
        return "must be an object"
    if key in _ARRAYS and not isinstance(value, list):
        return "must be an array"
    return None


def _names(value: Any) -> bool:
    """Whether ``value`` is an array of strings (property or type names)."""
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def _check_subschema(value: Any, where: str) -> None:
    if not isinstance(value, dict | bool):
        raise UnsupportedError(
            f"schema {_shown(value)}", "a schema must be an object or a boolean", where=where
        )


def _shown(value: Any) -> str:
    return json.dumps(value, default=str)[:60]


def _joined(base: str, reference: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986), without an empty fragment; a fragment
    alone stays in ``base``'s document whatever its scheme (``urljoin`` knows no ``urn:``)."""
    if reference.startswith("#"):
        joined = base.partition("#")[0] + reference
    else:
        joined = urljoin(base, reference) if base else reference
    return joined.removesuffix("#")
