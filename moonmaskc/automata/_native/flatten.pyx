# cython: language_level=3
"""The IR flattened to rows in C: the native twin of ``flat_ir.python_flatten``, row for row.

In: the root ``ir.Node`` and the five IR node classes (``ByteSet``, ``Seq``, ``Alt``, ``Repeat``,
``Automaton``). Out, from ``flatten``: ``(kind, first, second, child_offsets, children, root,
masks, dfas, nodes)``, the fields of ``flat_ir.FlatIR`` in the same order with the same numbers as
the Python walk gives: ``masks`` a list of the distinct masks (Python ints) in order of first use,
``dfas`` the distinct embedded DFAs, ``nodes`` the first node object of each row.

The walk is the Python one (depth first, children before parents, each node object looked up by
identity first, rows hash-consed by kind, arguments and child rows), with its two dictionaries in
C: node identity -> row, and (kind, arguments, child rows) -> row, the key read back from the rows
already written, so no key tuple is made per node. A repetition count that does not fit 32 bits
raises ``OverflowError``, as numpy does for the Python walk's rows. Only ``ir`` nodes as the smart
constructors build them are expected: anything else raises ``TypeError``.
"""

from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int8_t, int32_t, int64_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy

import numpy as np

cdef int8_t _BYTE_SET = 0, _SEQ = 1, _ALT = 2, _REPEAT = 3, _AUTOMATON = 4
cdef int32_t _INT32_MAX = 2147483647


cdef struct Table:
    uint64_t* keys  # the node's address (identity table) or the row's hash (structure table); 0: empty
    int32_t* rows
    int64_t mask  # capacity - 1, capacity a power of two
    int64_t used


cdef struct Rows:
    int8_t* kind
    int32_t* first
    int32_t* second
    int64_t* offsets  # rows + 1 entries
    int64_t count
    int64_t capacity
    int32_t* children
    int64_t children_count
    int64_t children_capacity


cdef inline uint64_t _mix(uint64_t value) noexcept nogil:
    value ^= value >> 33
    value *= 0xFF51AFD7ED558CCDULL
    value ^= value >> 33
    value *= 0xC4CEB9FE1A85EC53ULL
    value ^= value >> 33
    return value


cdef int _table_init(Table* table, int64_t capacity) noexcept nogil:
    table.keys = <uint64_t*>calloc(capacity, sizeof(uint64_t))
    table.rows = <int32_t*>calloc(capacity, sizeof(int32_t))
    table.mask = capacity - 1
    table.used = 0
    return 0 if table.keys != NULL and table.rows != NULL else -1


cdef void _table_free(Table* table) noexcept nogil:
    free(table.keys)
    free(table.rows)
    table.keys = NULL
    table.rows = NULL


cdef int32_t _identity_get(const Table* table, uint64_t key) noexcept nogil:
    cdef uint64_t at = _mix(key) & <uint64_t>table.mask
    while table.keys[at] != 0:
        if table.keys[at] == key:
            return table.rows[at]
        at = (at + 1) & <uint64_t>table.mask
    return -1


cdef inline uint64_t _slot(uint64_t key, bint key_is_hash) noexcept nogil:
    """Where ``key`` starts looking: the structure table's keys are hashes already."""
    return key if key_is_hash else _mix(key)


cdef int _grow(Table* table, bint keys_are_hashes) noexcept nogil:
    """Twice the capacity, every entry placed again."""
    cdef Table bigger
    cdef int64_t i
    cdef uint64_t at
    if _table_init(&bigger, (table.mask + 1) * 2) < 0:
        _table_free(&bigger)
        return -1
    for i in range(table.mask + 1):
        if table.keys[i] != 0:
            at = _slot(table.keys[i], keys_are_hashes) & <uint64_t>bigger.mask
            while bigger.keys[at] != 0:
                at = (at + 1) & <uint64_t>bigger.mask
            bigger.keys[at] = table.keys[i]
            bigger.rows[at] = table.rows[i]
    bigger.used = table.used
    _table_free(table)
    table[0] = bigger
    return 0


cdef int _put(Table* table, uint64_t key, int32_t row, bint key_is_hash) noexcept nogil:
    """Add ``key`` -> ``row`` (``key`` not in the table yet), growing the table first if need be."""
    cdef uint64_t at
    if (table.used + 1) * 2 > table.mask + 1 and _grow(table, key_is_hash) < 0:
        return -1
    at = _slot(key, key_is_hash) & <uint64_t>table.mask
    while table.keys[at] != 0:
        at = (at + 1) & <uint64_t>table.mask
    table.keys[at] = key
    table.rows[at] = row
    table.used += 1
    return 0


cdef uint64_t _row_hash(int8_t kind, int32_t first, int32_t second, const int32_t* children, int64_t n) noexcept nogil:
    cdef uint64_t value = _mix(<uint64_t>kind * 0x9E3779B97F4A7C15ULL + <uint64_t><uint32_t>first)
    cdef int64_t i
    value = _mix(value ^ (<uint64_t><uint32_t>second + 0x632BE59BD9B4E019ULL))
    for i in range(n):
        value = _mix(value ^ (<uint64_t><uint32_t>children[i] + 0x8CB92BA72F3D8DD7ULL * <uint64_t>(i + 1)))
    return value | 1  # never 0 (the empty slot)


cdef bint _row_is(
    const Rows* rows, int64_t row, int8_t kind, int32_t first, int32_t second, const int32_t* children, int64_t n
) noexcept nogil:
    cdef int64_t begin = rows.offsets[row], i
    if rows.kind[row] != kind or rows.first[row] != first or rows.second[row] != second:
        return False
    if rows.offsets[row + 1] - begin != n:
        return False
    for i in range(n):
        if rows.children[begin + i] != children[i]:
            return False
    return True


cdef int _rows_reserve(Rows* rows, int64_t children) noexcept nogil:
    cdef int64_t capacity
    cdef void* grown
    if rows.count + 1 >= rows.capacity:
        capacity = rows.capacity * 2 if rows.capacity else 256
        grown = realloc(rows.kind, capacity * sizeof(int8_t))
        if grown == NULL:
            return -1
        rows.kind = <int8_t*>grown
        grown = realloc(rows.first, capacity * sizeof(int32_t))
        if grown == NULL:
            return -1
        rows.first = <int32_t*>grown
        grown = realloc(rows.second, capacity * sizeof(int32_t))
        if grown == NULL:
            return -1
        rows.second = <int32_t*>grown
        grown = realloc(rows.offsets, (capacity + 1) * sizeof(int64_t))
        if grown == NULL:
            return -1
        rows.offsets = <int64_t*>grown
        rows.capacity = capacity
    if rows.children_count + children > rows.children_capacity:
        capacity = rows.children_capacity * 2 if rows.children_capacity else 1024
        while capacity < rows.children_count + children:
            capacity *= 2
        grown = realloc(rows.children, capacity * sizeof(int32_t))
        if grown == NULL:
            return -1
        rows.children = <int32_t*>grown
        rows.children_capacity = capacity
    return 0


cdef int32_t _add_row(Rows* rows, int8_t kind, int32_t first, int32_t second, const int32_t* children, int64_t n) noexcept nogil:
    """Append a row (space reserved by the caller); its number."""
    cdef int64_t row = rows.count
    rows.kind[row] = kind
    rows.first[row] = first
    rows.second[row] = second
    if n:
        memcpy(&rows.children[rows.children_count], children, n * sizeof(int32_t))
    rows.children_count += n
    rows.offsets[row + 1] = rows.children_count
    rows.count += 1
    return <int32_t>row


cdef int32_t _count(object value) except -2:
    """A repetition bound as int32 (``None``: -1)."""
    if value is None:
        return -1
    if value > _INT32_MAX:
        raise OverflowError(f"Python integer {value} out of bounds for int32")
    return <int32_t>value


def flatten(root, byte_set_type, seq_type, alt_type, repeat_type, automaton_type):
    """See the module docstring."""
    cdef Table identity, structure
    cdef Rows rows
    cdef PyObject** pending = NULL
    cdef int64_t pending_count = 0, pending_capacity = 0, n, i, missing
    cdef int32_t row, first, second
    cdef int32_t* child_rows = NULL
    cdef int64_t child_capacity = 0
    cdef int8_t code
    cdef uint64_t key, row_key, at
    cdef PyObject* node_ptr
    cdef PyObject* item_ptr
    cdef tuple items
    cdef void* grown
    mask_rows = {}
    masks = []
    dfa_rows = {}
    dfas = []
    nodes = []
    _rows_init(&rows)
    if _table_init(&identity, 1024) < 0 or _table_init(&structure, 1024) < 0:
        _table_free(&identity)
        _table_free(&structure)
        raise MemoryError()
    try:
        if _rows_reserve(&rows, 0) < 0:
            raise MemoryError()
        rows.offsets[0] = 0
        pending_capacity = 256
        pending = <PyObject**>realloc(NULL, pending_capacity * sizeof(PyObject*))
        if pending == NULL:
            raise MemoryError()
        pending[0] = <PyObject*>root
        pending_count = 1
        while pending_count:
            node_ptr = pending[pending_count - 1]
            node = <object>node_ptr
            key = <uint64_t><uintptr_t>node_ptr
            if _identity_get(&identity, key) >= 0:
                pending_count -= 1
                continue
            kind = type(node)
            if kind is byte_set_type:
                mask = node.mask
                found_row = mask_rows.get(mask)
                if found_row is None:
                    if _rows_reserve(&rows, 0) < 0:
                        raise MemoryError()
                    row = _add_row(&rows, _BYTE_SET, <int32_t>len(masks), 0, NULL, 0)
                    mask_rows[mask] = row
                    masks.append(mask)
                    nodes.append(node)
                else:
                    row = found_row
            elif kind is automaton_type:
                dfa = node.dfa
                index = dfa_rows.get(id(dfa))
                if index is None:
                    index = dfa_rows[id(dfa)] = len(dfas)
                    dfas.append(dfa)
                if _rows_reserve(&rows, 0) < 0:
                    raise MemoryError()
                row = _add_row(&rows, _AUTOMATON, <int32_t>index, 0, NULL, 0)  # by identity: its own row
                nodes.append(node)
            else:
                if kind is repeat_type:
                    items = (node.item,)
                    code = _REPEAT
                    first = _count(node.min)
                    second = _count(node.max)
                elif kind is seq_type or kind is alt_type:
                    items = node.items
                    code = _SEQ if kind is seq_type else _ALT
                    first = 0
                    second = 0
                else:
                    raise TypeError(f"not an IR node: {kind.__name__}")
                n = PyTuple_GET_SIZE(items)
                missing = 0
                for i in range(n - 1, -1, -1):  # pushed in reverse, so the first is walked first
                    item_ptr = PyTuple_GET_ITEM(items, i)
                    if _identity_get(&identity, <uint64_t><uintptr_t>item_ptr) < 0:
                        if pending_count == pending_capacity:
                            grown = realloc(pending, pending_capacity * 2 * sizeof(PyObject*))
                            if grown == NULL:
                                raise MemoryError()
                            pending = <PyObject**>grown
                            pending_capacity *= 2
                        pending[pending_count] = item_ptr
                        pending_count += 1
                        missing += 1
                if missing:
                    continue
                if n > child_capacity:
                    grown = realloc(child_rows, n * sizeof(int32_t))
                    if grown == NULL:
                        raise MemoryError()
                    child_rows = <int32_t*>grown
                    child_capacity = n
                for i in range(n):
                    child_rows[i] = _identity_get(&identity, <uint64_t><uintptr_t>PyTuple_GET_ITEM(items, i))
                row_key = _row_hash(code, first, second, child_rows, n)
                at = row_key & <uint64_t>structure.mask
                row = -1
                while structure.keys[at] != 0:
                    if structure.keys[at] == row_key and _row_is(
                        &rows, structure.rows[at], code, first, second, child_rows, n
                    ):
                        row = structure.rows[at]
                        break
                    at = (at + 1) & <uint64_t>structure.mask
                if row < 0:
                    if _rows_reserve(&rows, n) < 0:
                        raise MemoryError()
                    if rows.count >= _INT32_MAX - 1:
                        raise OverflowError("the IR has more distinct nodes than 32-bit rows hold")
                    row = _add_row(&rows, code, first, second, child_rows, n)
                    nodes.append(node)
                    if _put(&structure, row_key, row, True) < 0:
                        raise MemoryError()
            if _put(&identity, key, row, False) < 0:
                raise MemoryError()
            pending_count -= 1
        root_row = _identity_get(&identity, <uint64_t><uintptr_t><PyObject*>root)
        count = rows.count
        kind_array = np.empty(count, dtype=np.int8)
        first_array = np.empty(count, dtype=np.int32)
        second_array = np.empty(count, dtype=np.int32)
        offsets_array = np.empty(count + 1, dtype=np.int64)
        children_array = np.empty(rows.children_count, dtype=np.int32)
        _copy_out(&rows, kind_array, first_array, second_array, offsets_array, children_array)
        return kind_array, first_array, second_array, offsets_array, children_array, root_row, masks, dfas, nodes
    finally:
        free(pending)
        free(child_rows)
        _table_free(&identity)
        _table_free(&structure)
        free(rows.kind)
        free(rows.first)
        free(rows.second)
        free(rows.offsets)
        free(rows.children)


cdef void _rows_init(Rows* rows) noexcept nogil:
    rows.kind = NULL
    rows.first = NULL
    rows.second = NULL
    rows.offsets = NULL
    rows.children = NULL
    rows.count = 0
    rows.capacity = 0
    rows.children_count = 0
    rows.children_capacity = 0


cdef void _copy_out(
    const Rows* rows,
    int8_t[::1] kind,
    int32_t[::1] first,
    int32_t[::1] second,
    int64_t[::1] offsets,
    int32_t[::1] children,
) noexcept:
    if rows.count:
        memcpy(&kind[0], rows.kind, rows.count * sizeof(int8_t))
        memcpy(&first[0], rows.first, rows.count * sizeof(int32_t))
        memcpy(&second[0], rows.second, rows.count * sizeof(int32_t))
    memcpy(&offsets[0], rows.offsets, (rows.count + 1) * sizeof(int64_t))
    if rows.children_count:
        memcpy(&children[0], rows.children, rows.children_count * sizeof(int32_t))
