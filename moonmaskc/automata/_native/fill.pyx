# cython: language_level=3
"""Native mask fill: one packed mask row copied into a caller's bitmask, checks included.

``copy_row(out, row, source, words)``
  Takes: ``out`` (any object with the buffer protocol; the caller passes numpy arrays), the row
  ``row`` of ``out`` to fill, ``source`` (a C-contiguous buffer of ``words`` 4-byte words, the
  mask row) and ``words``.
  Hands on: ``True`` once row ``row`` of ``out`` holds ``source`` in its first ``words`` words and
  zeros after them; ``False``, having written nothing, when ``out`` is not a writable C-contiguous
  1-D or 2-D buffer of 4-byte integers (format ``i``, ``I``, ``<i`` ...) at least ``words`` wide
  with ``row`` one of its rows, or ``source`` is not what it should be. The caller then takes its
  checked Python path, which raises the error that names the problem.

``fill_source(mask_row)``
  Takes: a packed mask row (uint32[words]). Hands on: what a fill copies from: a ``SparseRow`` when
  at most ``words // SPARSE_SHARE`` of its words differ from all zeros (or from all ones), else the
  row itself. A sparse row is filled as one ``memset`` of the constant word and a scatter of the
  words that differ, so its fill does not read a whole row that may have left the cache (a row of
  Llama-3 is 16 KB; most of a JSON schema's states allow a few tokens, or all but a few).

``StateRowFiller(num_states, words, sources, row_of, fallback)``, method ``fill(state, out, row=0,
*, tokens_left=None)``
  A guide's ``fill_bitmask`` in one C call: for an int ``state`` below ``num_states``, an int
  ``row``, a numpy ``out`` and no ``tokens_left``, the mask row of ``state`` (``sources[state]``,
  a list shared with the guide, filled by ``row_of(state)`` on first use: a row or a
  ``SparseRow`` from ``fill_source``) is copied as by ``copy_row``. Everything else, and whatever
  ``copy_row`` refuses, goes to ``fallback(state, out, row, tokens_left=tokens_left)``, the
  guide's checked Python fill, which serves or raises the error that names the problem.

The Python fast path costs about 0.7 us of attribute checks and numpy indexing around a copy of a
few kilobytes; here the checks read the buffer's fields and the copy is one ``memcpy``.
"""

from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS,
    PyBUF_FORMAT,
    PyBUF_WRITABLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy, memset

import numpy as np

_ndarray = np.ndarray

SPARSE_SHARE = 8

# Every bit of a word, typed: a bare 0xFFFFFFFF is a Python int to Cython (past 2**31), and a loop
# comparing words with it made a Python object per word (40 us for a GPT-2 row instead of 2).
cdef uint32_t ALL_ONES = ~(<uint32_t>0)


cdef class SparseRow:
    """A mask row as a constant word (0 or 0xFFFFFFFF) and the words that differ from it."""

    cdef readonly uint32_t constant
    cdef readonly Py_ssize_t words
    cdef const int32_t[::1] _index
    cdef const uint32_t[::1] _value
    cdef readonly object index
    cdef readonly object value

    def __init__(self, uint32_t constant, Py_ssize_t words, index, value):
        cdef Py_ssize_t i
        index = np.ascontiguousarray(index, dtype=np.int32)
        value = np.ascontiguousarray(value, dtype=np.uint32)
        if constant != 0 and constant != ALL_ONES:
            raise ValueError("a sparse row's constant word is 0 or 0xFFFFFFFF")
        if index.ndim != 1 or value.shape != index.shape or words < 0:
            raise ValueError("a sparse row needs one value per index")
        self._index = index
        self._value = value
        for i in range(self._index.shape[0]):
            if not 0 <= self._index[i] < words:
                raise ValueError("a sparse row's index is past its words")
        self.constant = constant
        self.words = words
        self.index = index
        self.value = value

    def __reduce__(self):
        return SparseRow, (self.constant, self.words, self.index, self.value)

    def dense(self):
        """The row as uint32[words]."""
        out = np.full(self.words, self.constant, dtype=np.uint32)
        out[self.index] = self.value
        return out


def fill_source(mask_row):
    """See the module docstring."""
    cdef const uint32_t[::1] row = mask_row
    cdef Py_ssize_t words = row.shape[0], i, differ_zero = 0, differ_ones = 0, at = 0
    cdef uint32_t constant
    cdef int32_t[::1] index_view
    cdef uint32_t[::1] value_view
    for i in range(words):
        differ_zero += row[i] != 0
        differ_ones += row[i] != ALL_ONES
    if differ_zero <= words // SPARSE_SHARE:
        constant, count = 0, differ_zero
    elif differ_ones <= words // SPARSE_SHARE:
        constant, count = ALL_ONES, differ_ones
    else:
        return mask_row
    index = np.empty(count, dtype=np.int32)
    value = np.empty(count, dtype=np.uint32)
    index_view = index
    value_view = value
    for i in range(words):
        if row[i] != constant:
            index_view[at] = <int32_t>i
            value_view[at] = row[i]
            at += 1
    return SparseRow(constant, words, index, value)


cdef bint _int32_format(const char* fmt):
    """``i`` or ``I``, with at most one byte-order prefix of native or little order."""
    if fmt == NULL:
        return False
    if fmt[0] == b"<" or fmt[0] == b"=" or fmt[0] == b"@":
        fmt += 1
    return (fmt[0] == b"i" or fmt[0] == b"I") and fmt[1] == 0


def copy_row(object out, object row, object source, Py_ssize_t words):
    cdef Py_ssize_t index
    try:
        index = row
    except (OverflowError, TypeError):  # (a row no buffer has: the checked path says so)
        return False
    return _copy_row(out, index, source, words)


cdef bint _copy_row(object out, Py_ssize_t row, object source, Py_ssize_t words) except -1:
    cdef Py_buffer target
    cdef Py_buffer origin
    cdef Py_ssize_t width, i
    cdef char* start
    cdef uint32_t* start_words
    cdef SparseRow sparse = None
    if type(source) is SparseRow:
        sparse = <SparseRow>source
        if sparse.words != words:
            return False
    elif not PyObject_CheckBuffer(source):
        return False
    if words < 0 or not PyObject_CheckBuffer(out):
        return False
    try:
        PyObject_GetBuffer(out, &target, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS)
    except (BufferError, ValueError):
        return False
    try:
        if target.itemsize != 4 or not _int32_format(target.format):
            return False
        if target.ndim == 2:
            width = target.shape[1]
            if not 0 <= row < target.shape[0]:
                return False
        elif target.ndim == 1:
            width = target.shape[0]
        else:
            return False
        if width < words:
            return False
        if sparse is not None:
            start = <char*>target.buf + (row * width * 4 if target.ndim == 2 else 0)
            memset(start, 0xFF if sparse.constant else 0, words * 4)
            if width > words:
                memset(start + words * 4, 0, (width - words) * 4)
            start_words = <uint32_t*>start
            for i in range(sparse._index.shape[0]):
                start_words[sparse._index[i]] = sparse._value[i]
            return True
        try:
            PyObject_GetBuffer(source, &origin, PyBUF_C_CONTIGUOUS)
        except (BufferError, ValueError):
            return False
        try:
            if origin.len != words * 4:
                return False
            start = <char*>target.buf + (row * width * 4 if target.ndim == 2 else 0)
            memcpy(start, origin.buf, words * 4)
            if width > words:
                memset(start + words * 4, 0, (width - words) * 4)
            return True
        finally:
            PyBuffer_Release(&origin)
    finally:
        PyBuffer_Release(&target)


cdef class StateRowFiller:
    """See the module docstring."""

    cdef Py_ssize_t _num_states
    cdef Py_ssize_t _words
    cdef list _sources
    cdef object _row_of
    cdef object _fallback

    def __init__(self, Py_ssize_t num_states, Py_ssize_t words, list sources, row_of, fallback):
        if num_states < 0 or words < 0 or len(sources) != num_states:
            raise ValueError("a filler needs one source slot per state")
        self._num_states = num_states
        self._words = words
        self._sources = sources
        self._row_of = row_of
        self._fallback = fallback

    def fill(self, state, out, row=0, *, tokens_left=None):
        cdef Py_ssize_t s, r
        if (
            tokens_left is None
            and type(state) is int
            and type(row) is int
            and type(out) is _ndarray
            and 0 <= state < self._num_states
            and -(1 << 40) < row < (1 << 40)
        ):
            s = state
            r = row
            source = self._sources[s]
            if source is None:
                source = self._row_of(s)
                self._sources[s] = source
            if _copy_row(out, r, source, self._words):
                return None
        self._fallback(state, out, row, tokens_left=tokens_left)
