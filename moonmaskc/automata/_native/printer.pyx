# cython: language_level=3
"""Native printer of the IR as a regex: ``moonmaskc.ir.to_regex``'s walk, compiled.

``printed(node, names, names_key, smallest, largest, memo, memo_entries, byteset_text)``
  Takes: an IR node (``moonmaskc.ir``), ``names`` (dict: a single byte's mask -> the text printed
  for it, the markers of counted regions and free values), ``names_key`` (the hashable form of the
  names that the memo's keys carry), the sizes ``smallest``..``largest`` of the subtrees whose texts
  are kept in ``memo`` (dict: (subtree, names_key) -> text, emptied once it holds
  ``memo_entries``), and ``byteset_text`` (a byte set's mask -> its text, ``ir._print_byteset``).
  Hands on: the text ``ir.to_regex`` gives, built the same way: bottom-up, once per distinct
  subtree object (by identity), a kept subtree's text taken from ``memo`` without walking it, and
  the texts of the subtrees of those sizes that hold no automaton stored there.

The IR is Python objects, so this is Python's own work without the interpreter's dispatch per
node: about three times faster than the pure printer on schemas' grammars. The pure printer in
``moonmaskc.ir`` stays the reference (``tests/test_ir_printer.py``).
"""

from moonmaskc import ir as _ir

cdef object _SEQ = _ir.Seq
cdef object _ALT = _ir.Alt
cdef object _REPEAT = _ir.Repeat
cdef object _BYTESET = _ir.ByteSet
cdef object _AUTOMATON = _ir.Automaton


cdef str _leaf_text(object leaf, object kind, dict names, object byteset_text):
    """The text of a byte set or an automaton leaf."""
    cdef object mask
    if kind is _BYTESET:
        mask = (<tuple>leaf)[0]
        if names and mask in names:
            return <str>names[mask]
        return <str>byteset_text(mask)
    return f"(?#{leaf.label}: {leaf.dfa.num_states} states)"


cdef str _composite_text(object node, object kind, list parts):
    """The text of a Seq, Alt or Repeat given its children's texts (``ir._print_step``)."""
    cdef tuple items
    cdef Py_ssize_t j, n
    cdef list pieces
    cdef object item, lo, hi
    cdef str inner, suffix
    if kind is _SEQ:
        items = node.items
        n = len(items)
        if n == 0:
            return "(?:)"
        pieces = []
        for j in range(n):
            if type(items[j]) is _ALT:
                pieces.append("(?:" + <str>parts[j] + ")")
            else:
                pieces.append(parts[j])
        return "".join(pieces)
    if kind is _ALT:
        return "|".join(parts)
    inner = parts[0]
    item = node.item
    if not (
        type(item) is _BYTESET
        or type(item) is _AUTOMATON
        or (type(item) is _SEQ and len(<tuple>item.items) == 0)
    ):
        inner = "(?:" + inner + ")"
    lo = node.min
    hi = node.max
    if hi is None:
        if lo == 0:
            suffix = "*"
        elif lo == 1:
            suffix = "+"
        else:
            suffix = f"{{{lo},}}"
    elif lo == 0 and hi == 1:
        suffix = "?"
    elif lo == hi:
        suffix = f"{{{lo}}}"
    else:
        suffix = f"{{{lo},{hi}}}"
    return inner + suffix


def printed(
    object node,
    dict names,
    object names_key,
    Py_ssize_t smallest,
    Py_ssize_t largest,
    dict memo,
    Py_ssize_t memo_entries,
    object byteset_text,
):
    """See the module docstring."""
    cdef dict done = {}
    cdef list work = [(node, False)]
    cdef list parts
    cdef tuple children, entry
    cdef object current, kind, child, child_kind, key, child_key, found
    cdef bint expanded
    cdef Py_ssize_t size, j
    cdef str text
    while work:
        entry = <tuple>work.pop()
        current = entry[0]
        expanded = entry[1]
        key = id(current)
        if key in done:
            continue
        kind = type(current)
        if kind is _SEQ or kind is _ALT:
            children = current.items
        elif kind is _REPEAT:
            children = (current.item,)
        else:
            done[key] = _leaf_text(current, kind, names, byteset_text)
            continue
        size = current._size
        if expanded:
            parts = [done[id(child)] for child in children]
            text = _composite_text(current, kind, parts)
            if not current._automata and smallest <= size <= largest:
                if len(memo) >= memo_entries:
                    memo.clear()
                memo[(current, names_key)] = text
            done[key] = text
            continue
        if smallest <= size <= largest:
            found = memo.get((current, names_key))
            if found is not None:
                done[key] = found
                continue
        work.append((current, True))
        for j in range(len(children) - 1, -1, -1):
            child = children[j]
            child_key = id(child)
            if child_key in done:
                continue
            child_kind = type(child)
            if child_kind is _BYTESET or child_kind is _AUTOMATON:
                done[child_key] = _leaf_text(child, child_kind, names, byteset_text)
            else:
                work.append((child, False))
    return done[id(node)]
