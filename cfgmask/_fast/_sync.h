/* Memory-ordering helpers and a recursive mutex for the mask caches.
 *
 * Readers of the shared caches take no lock: a writer fills an entry
 * completely, then publishes it with a release store; a reader that sees the
 * published value (acquire load) sees everything written before it.  Writers
 * serialise on one recursive mutex per compiled grammar (a cache build steps
 * the lexer, which may itself add a state under the same lock).
 */
#ifndef CFGMASK_SYNC_H
#define CFGMASK_SYNC_H
#include <Python.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>

/* Large zeroed tables sized for Limits.max_lexer_states come straight from
 * mmap: untouched pages cost nothing and free returns them to the system.
 * With calloc, glibc raises its mmap threshold after the first such block is
 * freed and then serves the next one from the heap with a memset: 3-30 ms per
 * compile for the 20-40 MB a lexer reserves.  A 64-byte header keeps the
 * mapping's length (and the alignment). */
static inline void *cfg_zalloc(size_t n) {
    size_t total = n + 64;
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    *(size_t *)p = total;
    return (char *)p + 64;
}
static inline void cfg_zfree(void *q) {
    if (q == NULL) return;
    char *p = (char *)q - 64;
    munmap(p, *(size_t *)p);
}

static inline int32_t cfg_load_i32(const int32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void cfg_store_i32(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline uint64_t cfg_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void cfg_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void *cfg_load_ptr(void *const *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void cfg_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline int64_t cfg_add_i64(int64_t *p, int64_t v) { return __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL); }

typedef struct { pthread_mutex_t m; } cfg_rmutex;

static inline int cfg_rmutex_init(cfg_rmutex *r) {
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a)) return -1;
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    int rc = pthread_mutex_init(&r->m, &a);
    pthread_mutexattr_destroy(&a);
    return rc ? -1 : 0;
}
/* GIL-aware: small fills and consumes run with the GIL held (a release and
 * re-acquire per call costs more than the work, and two threads then hand the
 * GIL back and forth).  A thread that holds the GIL must not block on a mutex
 * whose owner may need the GIL to finish (a cache build raising an error, a
 * nogil fill on another thread calling back into Python), so it lets the GIL
 * go while it waits.  Threads without a Python thread state (OpenMP workers)
 * simply block. */
static inline void cfg_rmutex_lock(cfg_rmutex *r) {
    if (pthread_mutex_trylock(&r->m) == 0) return;
    if (PyGILState_Check()) {
        PyThreadState *ts = PyEval_SaveThread();
        pthread_mutex_lock(&r->m);
        PyEval_RestoreThread(ts);
    } else {
        pthread_mutex_lock(&r->m);
    }
}
static inline void cfg_rmutex_unlock(cfg_rmutex *r) { pthread_mutex_unlock(&r->m); }
static inline void cfg_rmutex_destroy(cfg_rmutex *r) { pthread_mutex_destroy(&r->m); }
static inline void cfg_yield(void) { sched_yield(); }
#endif
