# cython: language_level=3
"""Hand a buffer that C code allocated with malloc to numpy without copying it.

In: the address of a malloc'd pointer and the array's shape. Out: a C-contiguous numpy array over
that memory, which ``free`` releases when the array (and every view of it) is gone; the pointer is
set to NULL, so that the caller's cleanup no longer frees it. A shape with a zero dimension gives an
empty array and frees the buffer at once (Cython's array type has no empty shapes).

Copying a large result into a fresh numpy array made the kernel zero and map every page a second
time; on the largest schemas that was a fifth of the time from IR to DFA.
"""

from cython cimport view
from libc.stdint cimport int32_t, uint8_t
from libc.stdlib cimport free

import numpy as np


cdef inline object _owned(void** data, tuple shape, Py_ssize_t itemsize, str format, object dtype):
    """The array of ``shape`` over ``*data`` (items of ``itemsize`` bytes, struct ``format``)."""
    cdef view.array holder
    cdef Py_ssize_t count = 1
    for extent in shape:
        count *= extent
    if count <= 0:
        free(data[0])
        data[0] = NULL
        return np.empty(shape, dtype=dtype)
    holder = view.array(shape=shape, itemsize=itemsize, format=format, mode="c", allocate_buffer=False)
    holder.data = <char*>data[0]
    holder.callback_free_data = free
    data[0] = NULL
    return np.asarray(holder)


cdef inline object owned_int32(int32_t** data, Py_ssize_t rows, Py_ssize_t columns):
    return _owned(<void**>data, (max(rows, 0), max(columns, 0)), sizeof(int32_t), "i", np.int32)


cdef inline object owned_uint8(uint8_t** data, Py_ssize_t size):
    return _owned(<void**>data, (max(size, 0),), sizeof(uint8_t), "B", np.uint8)


cdef inline object owned_int32_vector(int32_t** data, Py_ssize_t size):
    return _owned(<void**>data, (max(size, 0),), sizeof(int32_t), "i", np.int32)
