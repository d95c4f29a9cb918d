# C memory helpers of the cfgmask runtime, shared by _lexer, _earley, _runtime
# and _matcher: growing an array, and pointers into numpy arrays.
from libc.stdlib cimport realloc
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS
from cfgmask._fast._types cimport int64_t


cdef inline int raise_memory(str what) except -1:
    """``MemoryError("cfgmask: out of memory (what)")``; a bare ``MemoryError()``
    when ``what`` is None."""
    if what is None:
        raise MemoryError()
    raise MemoryError(f"cfgmask: out of memory ({what})")


cdef inline int raise_oom(const char* what) except -1 nogil:
    """:func:`raise_memory` from code without the GIL (``what`` NULL: a bare one)."""
    with gil:
        raise_memory(None if what == NULL else what.decode("utf-8"))


cdef inline int64_t grown(int64_t cap, int64_t need) noexcept nogil:
    """``cap`` doubled until it holds ``need`` (``cap`` itself when it does).
    ``cap`` must be positive: every array starts with a capacity of at least 64."""
    while cap < need:
        cap *= 2
    return cap


cdef inline void* grow(void* p, size_t nbytes, const char* what) except NULL nogil:
    """``realloc(p, nbytes)``; on failure :func:`raise_oom` with ``p`` untouched
    (still the caller's, still valid).  Assign the result only after the call
    returns: ``self.a = <T*>grow(self.a, n * sizeof(T), "what")``."""
    cdef void* q = realloc(p, nbytes)
    if q == NULL:
        raise_oom(what)
    return q


cdef inline const void* data_of(arr) except? NULL:
    """The address of the data of ``arr``, a contiguous buffer (a numpy array made by
    ``np.ascontiguousarray``) that the caller keeps alive as long as the pointer."""
    cdef Py_buffer view
    PyObject_GetBuffer(arr, &view, PyBUF_ANY_CONTIGUOUS)
    cdef const void* p = view.buf
    PyBuffer_Release(&view)
    return p
