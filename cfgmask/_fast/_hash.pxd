# The one hash of an int32 sequence (FNV-1a over the values, seeded with the
# length, then a final mix) used by the C hash tables of the lexer's product
# states and of the regex kernels' subsets.  An inline function: nothing to
# link, so a compile kernel that cimports it still imports nothing from cfgmask.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


cdef inline uint64_t hash_ints(const int32_t* a, int64_t n) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL ^ <uint64_t>n
    cdef int64_t i
    for i in range(n):
        h ^= <uint32_t>a[i]
        h *= 1099511628211ULL
    return h ^ (h >> 31)
