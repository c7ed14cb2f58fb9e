/* The kernel thread pool (pa_threadpool.h).
 *
 * n-1 persistent helper threads plus the calling thread. A job is the range
 * [0, n) cut into fixed chunks of `grain` items; threads take chunk indices from
 * an atomic counter, so each chunk runs exactly once and chunk boundaries never
 * depend on the thread count. One job runs at a time (g_call_mu); a call made
 * from inside a chunk (or from a pool thread) runs inline and serially.
 * Idle helpers sleep on a condition variable after a short spin. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

#include "common/pa_common.h"
#include "runtime/pa_rt_base.h"
#include "runtime/pa_threadpool.h"

#define PA_MAX_THREADS 512
#define PA_SPIN_ITERS 2000

/* ---------------------------------------------------------------------------
 * Thread count
 * ------------------------------------------------------------------------- */

static atomic_int g_override;      /* pa_set_num_threads (0 = none) */
static pthread_mutex_t g_count_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool g_count_known;  /* the counts below are final */
static atomic_int g_env_threads;   /* PYACLNN_NUM_THREADS (0 = unset / invalid) */
static atomic_int g_cpu_threads = 1; /* usable CPUs */

/* A limit file (cgroup) that cannot be read for a passing reason (out of
 * memory or file descriptors) sets *transient: the counts are then used but
 * read again next time, instead of taking the failure for "no limit" for good. */
static FILE *open_limit(const char *path, bool *transient) {
    bool t = false;
    FILE *f = pa_open_sys_file(path, &t);
    if (t) *transient = true;
    return f;
}

/* fscanf result `got` of f (then closed): a read error is transient too. */
static int scanned(FILE *f, int got, bool *transient) {
    if (got == EOF && ferror(f)) *transient = true;
    fclose(f);
    return got;
}

/* Reads "<quota> <period>" (cgroup v2 cpu.max). Returns CPUs or 0 if unlimited/unknown. */
static int read_cpu_max(const char *path, bool *transient) {
    FILE *f = open_limit(path, transient);
    if (f == NULL) return 0;
    char q[64] = {0};
    long long period = 0;
    int got = scanned(f, fscanf(f, "%63s %lld", q, &period), transient);
    if (got != 2 || strcmp(q, "max") == 0 || period <= 0) return 0;
    long long quota = atoll(q);
    if (quota <= 0) return 0;
    long long n = (quota + period - 1) / period;
    return n > PA_MAX_THREADS ? PA_MAX_THREADS : (int)n;
}

static long long read_ll(const char *path, bool *transient) {
    FILE *f = open_limit(path, transient);
    if (f == NULL) return 0;
    long long v = 0;
    if (scanned(f, fscanf(f, "%lld", &v), transient) != 1) v = 0;
    return v;
}

/* cgroup v1 cfs quota in `dir`. Returns CPUs or 0. */
static int read_cfs(const char *dir, bool *transient) {
    char p[512];
    snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", dir);
    long long quota = read_ll(p, transient);
    snprintf(p, sizeof p, "%s/cpu.cfs_period_us", dir);
    long long period = read_ll(p, transient);
    if (quota <= 0 || period <= 0) return 0;
    long long n = (quota + period - 1) / period;
    return n > PA_MAX_THREADS ? PA_MAX_THREADS : (int)n;
}

static int min_limit(int a, int b) {
    if (a == 0) return b;
    if (b == 0) return a;
    return a < b ? a : b;
}

/* CPU quota of this process's cgroup (and its ancestors); 0 = no limit. */
static int cgroup_cpu_limit(bool *transient) {
    int limit = 0;
    char v2path[384] = "";
    char v1path[384] = "";
    FILE *f = open_limit("/proc/self/cgroup", transient);
    if (f != NULL) {
        char line[512];
        while (fgets(line, sizeof line, f) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            char *c1 = strchr(line, ':');
            char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (c2 == NULL) continue;
            *c1 = '\0';
            *c2 = '\0';
            const char *ctrl = c1 + 1, *path = c2 + 1; /* line is now the hierarchy id */
            if (strncmp(line, "0", 2) == 0 && ctrl[0] == '\0') {
                snprintf(v2path, sizeof v2path, "%s", path);
            } else {
                /* v1: controller list contains "cpu" */
                char list[256];
                snprintf(list, sizeof list, ",%s,", ctrl);
                if (strstr(list, ",cpu,") != NULL) snprintf(v1path, sizeof v1path, "%s", path);
            }
        }
        if (ferror(f)) *transient = true;
        fclose(f);
    }
    /* cgroup v2: walk from our cgroup up to the root. */
    char dir[384];
    snprintf(dir, sizeof dir, "%s", v2path);
    for (;;) {
        char p[512];
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/cpu.max", strcmp(dir, "/") == 0 ? "" : dir);
        limit = min_limit(limit, read_cpu_max(p, transient));
        char *slash = strrchr(dir, '/');
        if (slash == NULL || dir[0] == '\0' || strcmp(dir, "/") == 0) break;
        if (slash == dir) snprintf(dir, sizeof dir, "/");
        else *slash = '\0';
    }
    /* cgroup v1 */
    const char *roots[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"};
    for (size_t i = 0; i < 2; i++) {
        char p[512];
        if (v1path[0] != '\0' && strcmp(v1path, "/") != 0) {
            snprintf(p, sizeof p, "%s%s", roots[i], v1path);
            limit = min_limit(limit, read_cfs(p, transient));
        }
        limit = min_limit(limit, read_cfs(roots[i], transient));
    }
    return limit;
}

/* Caller holds g_count_mu. */
static void count_init(void) {
    static bool env_done;
    if (!env_done) {
        env_done = true;
        const char *s = getenv("PYACLNN_NUM_THREADS");
        if (s != NULL && s[0] != '\0') {
            char *end = NULL;
            long v = strtol(s, &end, 10);
            if (end != NULL && *end == '\0' && v > 0) {
                atomic_store(&g_env_threads, v > PA_MAX_THREADS ? PA_MAX_THREADS : (int)v);
            } else {
                fprintf(stderr,
                        "pyaclnn: warning: ignoring PYACLNN_NUM_THREADS=\"%s\" (expected a positive integer)\n", s);
            }
        }
    }
    int n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    bool transient = false;
    int lim = cgroup_cpu_limit(&transient);
    if (lim > 0 && lim < n) n = lim;
    if (n > PA_MAX_THREADS) n = PA_MAX_THREADS;
    atomic_store(&g_cpu_threads, n > 0 ? n : 1);
    if (!transient) atomic_store(&g_count_known, true);
}

static void counts_load(void) {
    if (atomic_load(&g_count_known)) return;
    pthread_mutex_lock(&g_count_mu);
    if (!atomic_load(&g_count_known)) count_init();
    pthread_mutex_unlock(&g_count_mu);
}

int pa_rt_usable_cpus(void) {
    counts_load();
    return atomic_load(&g_cpu_threads);
}

int pa_num_threads(void) {
    int o = atomic_load(&g_override);
    if (o > 0) return o;
    counts_load();
    int env = atomic_load(&g_env_threads);
    return env > 0 ? env : atomic_load(&g_cpu_threads);
}

/* An explicit setting wins over PYACLNN_NUM_THREADS; 0 returns to the default. */
void pa_set_num_threads(int n) {
    if (n < 0) n = 0;
    if (n > PA_MAX_THREADS) n = PA_MAX_THREADS;
    atomic_store(&g_override, n);
}

/* ---------------------------------------------------------------------------
 * Pool
 *
 * The caller publishes a job (on its own stack) as g_cur and bumps g_gen.
 * A helper that wakes takes the job under g_pool_mu and counts itself in
 * job->active; the caller runs chunks too, then waits only for the helpers
 * that actually entered (active == 0) and unpublishes the job. Helpers that
 * wake late find g_cur == NULL and go back to sleep, so a descheduled helper
 * never delays a job.
 * ------------------------------------------------------------------------- */

typedef struct {
    pa_range_fn fn;
    void *ctx;
    int64_t n, grain, nchunks;
    atomic_llong next; /* next chunk index to hand out */
    int active;        /* helpers inside the job (g_pool_mu) */
} pa_job;

static pthread_mutex_t g_call_mu = PTHREAD_MUTEX_INITIALIZER; /* one job at a time; owns resizing */
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work_cv = PTHREAD_COND_INITIALIZER; /* helpers: new job or stop */
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER; /* caller: helpers left the job */
static pthread_t *g_threads;
static int g_nhelpers;      /* guarded by g_call_mu */
static atomic_ullong g_gen; /* job generation; changed under g_pool_mu */
static pa_job *g_cur;       /* the running job, NULL between jobs (g_pool_mu) */
static bool g_stop;         /* g_pool_mu */
/* Generation a new helper starts from, and whether helpers may spin: set by
 * pool_resize (under g_call_mu) before creating helpers and constant until the
 * next resize, which joins them first. */
static unsigned long long g_start_gen;
static bool g_spin;

static PA_THREAD_LOCAL bool tl_in_pool; /* inside a chunk, or a pool thread */

static void run_chunks(pa_job *j) {
    for (;;) {
        int64_t k = (int64_t)atomic_fetch_add(&j->next, 1);
        if (k >= j->nchunks) break;
        int64_t b = k * j->grain;
        int64_t e = (j->n - b > j->grain) ? b + j->grain : j->n;
        j->fn(j->ctx, b, e);
    }
}

static void *helper_main(void *p) {
    PA_UNUSED(p);
    tl_in_pool = true;
    pthread_mutex_lock(&g_pool_mu);
    unsigned long long seen = g_start_gen;
    for (;;) {
        while (atomic_load(&g_gen) == seen && !g_stop) pthread_cond_wait(&g_work_cv, &g_pool_mu);
        if (g_stop) break;
        seen = atomic_load(&g_gen);
        pa_job *j = g_cur;
        if (j == NULL) continue; /* woke after the job finished */
        j->active++;
        pthread_mutex_unlock(&g_pool_mu);

        run_chunks(j);

        pthread_mutex_lock(&g_pool_mu);
        if (--j->active == 0) pthread_cond_signal(&g_done_cv);
        pthread_mutex_unlock(&g_pool_mu);
        /* Brief spin (only when every pool thread has a CPU of its own):
         * back-to-back kernels then skip the sleep / wake-up round trip. */
        if (g_spin) {
            for (int i = 0; i < PA_SPIN_ITERS && atomic_load(&g_gen) == seen; i++) pa_rt_cpu_relax();
        }
        pthread_mutex_lock(&g_pool_mu);
    }
    pthread_mutex_unlock(&g_pool_mu);
    return NULL;
}

/* Caller holds g_call_mu. Brings the pool to `want` helpers. */
static void pool_resize(int want) {
    if (want == g_nhelpers) return;
    if (g_nhelpers > 0) {
        pthread_mutex_lock(&g_pool_mu);
        g_stop = true;
        pthread_cond_broadcast(&g_work_cv);
        pthread_mutex_unlock(&g_pool_mu);
        for (int i = 0; i < g_nhelpers; i++) pthread_join(g_threads[i], NULL);
        pthread_mutex_lock(&g_pool_mu);
        g_stop = false;
        pthread_mutex_unlock(&g_pool_mu);
        g_nhelpers = 0;
    }
    free(g_threads);
    g_threads = NULL;
    if (want <= 0) return;
    g_threads = malloc((size_t)want * sizeof *g_threads);
    if (g_threads == NULL) return;
    g_start_gen = atomic_load(&g_gen);
    g_spin = want + 1 <= pa_rt_usable_cpus();
    int made = 0;
    for (; made < want; made++) {
        if (pthread_create(&g_threads[made], NULL, helper_main, NULL) != 0) break;
    }
    g_nhelpers = made; /* fewer helpers if thread creation failed: still correct */
}

void pa_parallel_for(int64_t n, int64_t grain, pa_range_fn fn, void *ctx) {
    if (n <= 0 || fn == NULL) return;
    if (grain <= 0) grain = 1;
    int64_t nchunks = n / grain + (n % grain != 0);
    int threads = pa_num_threads();
    if (tl_in_pool || nchunks == 1 || threads <= 1) {
        for (int64_t k = 0; k < nchunks; k++) {
            int64_t b = k * grain;
            int64_t e = (n - b > grain) ? b + grain : n;
            fn(ctx, b, e);
        }
        return;
    }
    pthread_mutex_lock(&g_call_mu);
    pool_resize(threads - 1);

    pa_job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.grain = grain;
    job.nchunks = nchunks;
    atomic_init(&job.next, 0);
    job.active = 0;

    int64_t wake = PA_MIN((int64_t)g_nhelpers, nchunks - 1);
    pthread_mutex_lock(&g_pool_mu);
    g_cur = &job;
    atomic_fetch_add(&g_gen, 1);
    if (wake >= g_nhelpers) {
        pthread_cond_broadcast(&g_work_cv);
    } else {
        for (int64_t i = 0; i < wake; i++) pthread_cond_signal(&g_work_cv);
    }
    pthread_mutex_unlock(&g_pool_mu);

    tl_in_pool = true;
    run_chunks(&job);
    tl_in_pool = false;

    pthread_mutex_lock(&g_pool_mu);
    while (job.active > 0) pthread_cond_wait(&g_done_cv, &g_pool_mu);
    g_cur = NULL;
    pthread_mutex_unlock(&g_pool_mu);
    pthread_mutex_unlock(&g_call_mu);
}

/* ---------------------------------------------------------------------------
 * Per-thread scratch
 * ------------------------------------------------------------------------- */

static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_scratch_key;
static PA_THREAD_LOCAL void *tl_scratch;
static PA_THREAD_LOCAL size_t tl_scratch_cap;

static bool g_scratch_key_ok;

static void scratch_free(void *p) { pa_free_aligned(p); }
static void scratch_key_init(void) { g_scratch_key_ok = pthread_key_create(&g_scratch_key, scratch_free) == 0; }

void *pa_thread_scratch(size_t bytes) {
    if (tl_scratch != NULL && bytes <= tl_scratch_cap) return tl_scratch;
    pthread_once(&g_scratch_once, scratch_key_init);
    if (!g_scratch_key_ok) return NULL; /* nothing would free the buffer when the thread exits */
    size_t cap = tl_scratch_cap * 2;
    if (cap < bytes) cap = bytes;
    if (cap < 4096) cap = 4096;
    if (cap > SIZE_MAX - 63) return NULL;
    cap = (cap + 63) & ~(size_t)63;
    void *p = pa_alloc_aligned(cap);
    if (p == NULL) return NULL;
    if (pthread_setspecific(g_scratch_key, p) != 0) { /* nothing would free it when the thread exits */
        pa_free_aligned(p);
        return NULL;
    }
    pa_free_aligned(tl_scratch);
    tl_scratch = p;
    tl_scratch_cap = cap;
    return p;
}
