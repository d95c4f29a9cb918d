/* A persistent thread pool for batch fills (CompiledGrammar.fill_bitmasks).
 *
 * Why not OpenMP: libgomp's idle workers spin before they sleep, and the spin
 * policy (OMP_WAIT_POLICY, GOMP_SPINCOUNT) is read once, when libgomp is first
 * loaded -- torch ships its own libgomp.so.1, and once torch is imported our
 * NEEDED libgomp.so.1 resolves to that copy -- so it cannot be set reliably
 * from here.  On a machine whose cores are busy, spinning workers and a
 * master spinning at the barrier took 3-30x the time of one thread
 * (docs/performance.md, "Batch fills").  This pool's waits are bounded:
 *
 * - idle workers sleep on a condition variable; the caller posts a job,
 *   signals as many workers as it wants, and fills rows itself at once;
 * - after a job a worker stays awake for 50 us, watching for the next one
 *   and yielding its CPU every ~64 pauses: on this 2-vCPU VM a wake-up costs
 *   the caller 4-8 us and the worker starts 20-30 us later, a tenth of a
 *   16-row batch; batches that come back to back (a CPU-bound decoding loop)
 *   skip both, and the yield hands a shared core to whoever needs it (a pure
 *   pause loop took busy 8-row batches from 1.0x to 1.2x of one thread);
 * - rows are claimed one at a time from an atomic counter, so a worker the
 *   kernel has not scheduled yet takes no rows and the caller does them: the
 *   caller waits only for rows a worker has actually started;
 * - the caller waits for those awake for at most 20 us (a worker's last row
 *   usually ends within that, and a futex wake-up costs about a row), then on
 *   a condition variable; workers never wait awake longer than 50 us;
 * - the counter carries the job number, so a worker that wakes late can never
 *   claim a row of a later job.
 *
 * One job at a time: a second thread that calls while a job runs fills its
 * rows alone (no queueing behind another batch).  Workers are plain pthreads
 * with their own Python thread state (made once, GIL released), so a row
 * that raises leaves its exception in that state; the pool clears it and the
 * caller refills the row with the GIL for the error.  After fork() the
 * child's pool is empty and starts workers again when needed.
 */
#ifndef CFGMASK_POOL_H
#define CFGMASK_POOL_H
#include <Python.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

typedef int (*cfg_task_fn)(void *ctx, int64_t i);  /* -1: a Python error is set */

#define CFG_POOL_MAX 256
/* how long the caller waits awake for the workers' last rows (a bound in
 * time, not in iterations: a pause instruction takes 10-140 cycles by CPU) */
#define CFG_POOL_CALLER_SPIN_NS 20000
/* how long a worker stays awake after its job, watching for the next one */
#ifndef CFG_POOL_WORKER_WATCH_NS
#define CFG_POOL_WORKER_WATCH_NS 50000
#endif

static inline void cfg_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int64_t cfg_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

typedef struct {
    pthread_mutex_t m;
    pthread_cond_t wake;       /* workers: a job was posted */
    pthread_cond_t done;       /* the caller: the job's last row finished */
    int started;               /* live workers */
    int busy;                  /* a job is posted */
    uint64_t gen;              /* job number */
    int want, joined;          /* workers asked for / that joined this job */
    cfg_task_fn fn;
    void *ctx;
    int64_t n;
    uint64_t next;             /* (job number << 32) | next row to claim */
    int64_t finished;          /* rows of this job done */
    int waiting;               /* the caller sleeps on `done` */
    int watching;              /* workers awake after a job, watching `gen` */
    int atfork;
} cfg_pool_t;

static cfg_pool_t cfg_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                              PTHREAD_COND_INITIALIZER, 0};

static inline void cfg_pool_spin_until_finished(int64_t n) {
    int64_t end = 0;
    for (int k = 0; __atomic_load_n(&cfg_pool.finished, __ATOMIC_ACQUIRE) < n; k++) {
        if ((k & 63) == 0) {
            int64_t now = cfg_now_ns();
            if (end == 0) end = now + CFG_POOL_CALLER_SPIN_NS;
            else if (now >= end) return;
        }
        cfg_cpu_relax();
    }
}

/* Wait awake until job `seen` is no longer the latest, for at most
 * CFG_POOL_WORKER_WATCH_NS. */
static inline void cfg_pool_watch(uint64_t seen) {
    int64_t end = cfg_now_ns() + CFG_POOL_WORKER_WATCH_NS;
    for (int k = 1; __atomic_load_n(&cfg_pool.gen, __ATOMIC_ACQUIRE) == seen; k++) {
        if ((k & 63) == 0) {
            if (cfg_now_ns() >= end) return;
            sched_yield();
        }
        cfg_cpu_relax();
    }
}

static void cfg_pool_after_fork(void) {
    /* the workers did not survive the fork */
    pthread_mutex_init(&cfg_pool.m, NULL);
    pthread_cond_init(&cfg_pool.wake, NULL);
    pthread_cond_init(&cfg_pool.done, NULL);
    cfg_pool.started = 0;
    cfg_pool.busy = 0;
    cfg_pool.waiting = 0;
    cfg_pool.want = 0;
    cfg_pool.watching = 0;
}

static inline int cfg_pool_claim(uint32_t g, int64_t n, int64_t *out) {
    uint64_t v = __atomic_load_n(&cfg_pool.next, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((uint32_t)(v >> 32) != g) return 0;
        int64_t i = (int64_t)(v & 0xffffffffu);
        if (i >= n) return 0;
        if (__atomic_compare_exchange_n(&cfg_pool.next, &v, v + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            *out = i;
            return 1;
        }
    }
}

static inline void cfg_pool_row_done(void) {
    /* the lock only for the job's last row: the caller checks `finished` and
     * goes to sleep under it, so taking it after the increment cannot miss it */
    if (__atomic_add_fetch(&cfg_pool.finished, 1, __ATOMIC_ACQ_REL) == cfg_pool.n) {
        pthread_mutex_lock(&cfg_pool.m);
        if (cfg_pool.waiting) pthread_cond_signal(&cfg_pool.done);
        pthread_mutex_unlock(&cfg_pool.m);
    }
}

static void *cfg_pool_main(void *arg) {
    (void)arg;
    /* a thread state of its own, kept for the thread's life, GIL released:
     * a row that raises needs one, and making it per job would take the GIL */
    PyGILState_STATE gs = PyGILState_Ensure();
    (void)gs;
    PyThreadState *ts = PyEval_SaveThread();
    uint64_t seen = 0;
    pthread_mutex_lock(&cfg_pool.m);
    for (;;) {
        int watched = 0;
        while (!(cfg_pool.busy && cfg_pool.gen != seen && cfg_pool.joined < cfg_pool.want)) {
            if (!watched && seen != 0 && CFG_POOL_WORKER_WATCH_NS > 0) {
                /* once per job, stay awake a little for the next one */
                watched = 1;
                cfg_pool.watching++;
                pthread_mutex_unlock(&cfg_pool.m);
                cfg_pool_watch(seen);
                pthread_mutex_lock(&cfg_pool.m);
                cfg_pool.watching--;
                continue;
            }
            pthread_cond_wait(&cfg_pool.wake, &cfg_pool.m);
        }
        seen = cfg_pool.gen;
        cfg_pool.joined++;
        cfg_task_fn fn = cfg_pool.fn;
        void *ctx = cfg_pool.ctx;
        int64_t n = cfg_pool.n;
        uint32_t g = (uint32_t)cfg_pool.gen;
        pthread_mutex_unlock(&cfg_pool.m);
        int64_t i;
        while (cfg_pool_claim(g, n, &i)) {
            if (fn(ctx, i) < 0) {
                PyEval_RestoreThread(ts);
                PyErr_Clear();
                ts = PyEval_SaveThread();
            }
            cfg_pool_row_done();
        }
        pthread_mutex_lock(&cfg_pool.m);
    }
    return NULL;
}

/* Start one more worker; the caller holds cfg_pool.m.  0 on success. */
static int cfg_pool_spawn(void) {
    pthread_t t;
    pthread_attr_t a;
    sigset_t all, old;
    int rc;
    if (!cfg_pool.atfork) {
        if (pthread_atfork(NULL, NULL, cfg_pool_after_fork) != 0) return -1;
        cfg_pool.atfork = 1;
    }
    if (pthread_attr_init(&a) != 0) return -1;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    /* signals go to the interpreter's threads, never to a worker */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&t, &a, cfg_pool_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0) return -1;
    cfg_pool.started++;
    return 0;
}

static void cfg_pool_clear_error(void) {
    PyGILState_STATE s = PyGILState_Ensure();
    PyErr_Clear();
    PyGILState_Release(s);
}

/* Run fn(ctx, i) for i in [0, n) on the calling thread and up to nt - 1
 * workers.  Call without the GIL (workers starting up take it once).  Returns
 * the number of threads that could take rows (1: the caller alone).  A row
 * whose fn returned -1 is the caller's to detect (the error is cleared). */
static int cfg_pool_run(cfg_task_fn fn, void *ctx, int64_t n, int nt) {
    int64_t i;
    int want;
    uint32_t g;
    if (nt > CFG_POOL_MAX) nt = CFG_POOL_MAX;
    if (nt > n) nt = (int)n;
    if (nt <= 1 || n > 0x7fffffff) goto serial;
    pthread_mutex_lock(&cfg_pool.m);
    if (cfg_pool.busy) {            /* another thread's batch: do ours alone */
        pthread_mutex_unlock(&cfg_pool.m);
        goto serial;
    }
    while (cfg_pool.started < nt - 1 && cfg_pool_spawn() == 0) {}
    want = cfg_pool.started < nt - 1 ? cfg_pool.started : nt - 1;
    if (want <= 0) {
        pthread_mutex_unlock(&cfg_pool.m);
        goto serial;
    }
    cfg_pool.busy = 1;
    __atomic_store_n(&cfg_pool.gen, cfg_pool.gen + 1, __ATOMIC_RELEASE);
    g = (uint32_t)cfg_pool.gen;
    cfg_pool.fn = fn;
    cfg_pool.ctx = ctx;
    cfg_pool.n = n;
    cfg_pool.finished = 0;
    cfg_pool.want = want;
    cfg_pool.joined = 0;
    __atomic_store_n(&cfg_pool.next, ((uint64_t)g) << 32, __ATOMIC_RELEASE);
    int all = want >= cfg_pool.started;
    /* workers watching `gen` see the job without a wake-up (a futex wake-up
     * costs the caller 4-8 us here, and the woken worker starts 20-30 us
     * later); one that stops watching now re-checks under the lock */
    int sleeping = want - cfg_pool.watching;
    pthread_mutex_unlock(&cfg_pool.m);
    /* signalled after the unlock: a worker woken under the lock would block on
     * it at once and need a second wake-up (4 us on the caller's path here) */
    if (sleeping > 0) {
        if (all) {
            pthread_cond_broadcast(&cfg_pool.wake);
        } else {
            for (int k = 0; k < sleeping; k++) pthread_cond_signal(&cfg_pool.wake);
        }
    }
    while (cfg_pool_claim(g, n, &i)) {
        if (fn(ctx, i) < 0) cfg_pool_clear_error();
        cfg_pool_row_done();
    }
    /* a worker's last row ends within a row's time (10-20 us): wait that long
     * awake before sleeping, as a futex wake-up costs about as much as a row */
    cfg_pool_spin_until_finished(n);
    pthread_mutex_lock(&cfg_pool.m);
    cfg_pool.want = 0;              /* a worker waking now has nothing to do: let it sleep */
    while (__atomic_load_n(&cfg_pool.finished, __ATOMIC_ACQUIRE) < n) {
        cfg_pool.waiting = 1;
        pthread_cond_wait(&cfg_pool.done, &cfg_pool.m);
    }
    cfg_pool.waiting = 0;
    cfg_pool.busy = 0;
    pthread_mutex_unlock(&cfg_pool.m);
    return want + 1;
serial:
    for (i = 0; i < n; i++)
        if (fn(ctx, i) < 0) cfg_pool_clear_error();
    return 1;
}
#endif
