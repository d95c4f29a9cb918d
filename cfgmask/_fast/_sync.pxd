# Memory ordering and locks for the shared mask caches (see _sync.h).
from cfgmask._fast._types cimport int32_t, int64_t, uint64_t

cdef extern from "_sync.h" nogil:
    ctypedef struct cfg_rmutex:
        pass
    int32_t cfg_load_i32(const int32_t* p)
    void cfg_store_i32(int32_t* p, int32_t v)
    uint64_t cfg_load_u64(const uint64_t* p)
    void cfg_store_u64(uint64_t* p, uint64_t v)
    void* cfg_load_ptr(void* const* p)
    void cfg_store_ptr(void** p, void* v)
    int64_t cfg_add_i64(int64_t* p, int64_t v)
    int cfg_rmutex_init(cfg_rmutex* r)
    void cfg_rmutex_lock(cfg_rmutex* r)
    void cfg_rmutex_unlock(cfg_rmutex* r)
    void cfg_rmutex_destroy(cfg_rmutex* r)
    void cfg_yield()
    void* cfg_zalloc(size_t n)
    void cfg_zfree(void* p)
