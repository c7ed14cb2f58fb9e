/* White-box tests of the runtime internals that have no public entry point:
 * pa_parallel_for / pa_thread_scratch, pa_stream_submit error propagation and
 * the ISA cap. The runtime sources are compiled into this program (unity
 * build; needs -I native), so it tests its own private copy of the runtime and
 * does not touch the state of libascendcl.so. Exits 1 on the first failure. */
#define _GNU_SOURCE
#if defined(__x86_64__) && !defined(PA_HAVE_X86_KERNELS)
#define PA_HAVE_X86_KERNELS 1 /* probe the real tiers, as the x86-64 library does */
#endif
#include "common/pa_common.c"
#include "runtime/base.c"
#include "cpu/cpu.c"
#include "runtime/capacity.c"
#include "runtime/device.c"
#include "runtime/event.c"
#include "runtime/init.c"
#include "runtime/memory.c"
#include "runtime/memreg.c"
#include "runtime/stream.c"
#include "runtime/threadpool.c"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* meta/ is not part of this build. */
size_t pa_dtype_size(aclDataType dt) { return dt == ACL_FLOAT ? 4 : 0; }

#define PA_CHECK_ERRMSG() pa_get_errmsg()
#include "pa_check.h"

/* ---- parallel_for coverage ---- */

typedef struct {
    atomic_int *hits;
    int64_t n, grain;
    atomic_int bad; /* chunk boundary errors */
    bool nested;
} cover_ctx;

static void cover_inner(void *p, int64_t b, int64_t e) {
    cover_ctx *c = p;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void cover_fn(void *p, int64_t b, int64_t e) {
    cover_ctx *c = p;
    int64_t g = c->grain <= 0 ? 1 : c->grain;
    if (b % g != 0 || e != (b + g < c->n ? b + g : c->n) || b >= e) atomic_fetch_add(&c->bad, 1);
    /* scratch is per thread, 64-byte aligned, writable */
    char *scr = pa_thread_scratch((size_t)(e - b) * 8 + 1);
    if (scr == NULL || ((uintptr_t)scr & 63) != 0) atomic_fetch_add(&c->bad, 1);
    else memset(scr, 1, (size_t)(e - b) * 8 + 1);
    if (c->nested) {
        /* a nested call runs inline (must not deadlock); it counts each index once more */
        pa_parallel_for(e - b, 1, cover_inner, &(cover_ctx){c->hits + b, e - b, 1, 0, false});
    } else {
        for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
    }
}

static void check_cover(int64_t n, int64_t grain, int threads, bool nested) {
    pa_set_num_threads(threads);
    CHECK_EQ(pa_num_threads(), threads);
    atomic_int *hits = calloc((size_t)(n > 0 ? n : 1), sizeof *hits);
    CHECK(hits != NULL);
    cover_ctx c = {hits, n, grain, 0, nested};
    pa_parallel_for(n, grain, cover_fn, &c);
    CHECK_EQ(atomic_load(&c.bad), 0);
    for (int64_t i = 0; i < n; i++) {
        if (atomic_load(&hits[i]) != 1) {
            fprintf(stderr, "n=%lld grain=%lld threads=%d nested=%d: index %lld hit %d times\n", (long long)n,
                    (long long)grain, threads, (int)nested, (long long)i, atomic_load(&hits[i]));
            exit(1);
        }
    }
    free(hits);
}

static void test_parallel_for(void) {
    const int64_t ns[] = {0, 1, 7, 64, 1000, 100003};
    const int64_t grains[] = {0, 1, 3, 64, 5000, 1000000};
    const int threads[] = {1, 2, 3, 8, 33};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
                if (ns[i] > 1000 && grains[g] < 3) continue; /* keep it quick */
                check_cover(ns[i], grains[g], threads[t], false);
            }
    check_cover(1000, 10, 3, true);
    check_cover(1000, 10, 1, true);
    /* many small jobs back to back, thread count changing in between */
    for (int r = 0; r < 300; r++) check_cover(37, 2, 1 + r % 4, false);
    pa_set_num_threads(0);
}

/* several threads calling pa_parallel_for at once are serialised */
static void *concurrent_caller(void *p) {
    (void)p;
    for (int r = 0; r < 50; r++) {
        atomic_int hits[500];
        for (int i = 0; i < 500; i++) atomic_init(&hits[i], 0);
        cover_ctx c = {hits, 500, 7, 0, false};
        pa_parallel_for(500, 7, cover_fn, &c);
        for (int i = 0; i < 500; i++) {
            if (atomic_load(&hits[i]) != 1 || atomic_load(&c.bad) != 0) {
                fprintf(stderr, "concurrent parallel_for: index %d hit %d times\n", i, atomic_load(&hits[i]));
                exit(1);
            }
        }
    }
    return NULL;
}

static void test_concurrent_callers(void) {
    pa_set_num_threads(3);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&th[i], NULL, concurrent_caller, NULL), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    pa_set_num_threads(0);
}

static void test_scratch(void) {
    char *a = pa_thread_scratch(10);
    CHECK(a != NULL && ((uintptr_t)a & 63) == 0);
    char *b = pa_thread_scratch(100);
    CHECK(b == a); /* fits: same buffer */
    char *c = pa_thread_scratch(1 << 20);
    CHECK(c != NULL && ((uintptr_t)c & 63) == 0);
    memset(c, 0, 1 << 20);
    CHECK(pa_thread_scratch(0) != NULL);
}

/* ---- env precedence: PYACLNN_NUM_THREADS vs pa_set_num_threads ---- */
static void test_thread_count_env(void) {
    /* count_init has not run yet in this process (first use is here) */
    CHECK_EQ(pa_num_threads(), 2); /* main() set PYACLNN_NUM_THREADS=2 */
    pa_set_num_threads(3);
    CHECK_EQ(pa_num_threads(), 3);
    pa_set_num_threads(0);
    CHECK_EQ(pa_num_threads(), 2);
    CHECK(g_cpu_threads >= 1);
}

/* ---- cgroup quota parsing ---- */
static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void test_cgroup_parsing(void) {
    char dir[] = "/tmp/pa_cg_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char p[256], q[256];
    bool t = false; /* a missing or unparsable file is "no limit" for good, not a transient failure */
    snprintf(p, sizeof p, "%s/cpu.max", dir);
    write_file(p, "150000 100000\n");
    CHECK_EQ(read_cpu_max(p, &t), 2);
    write_file(p, "max 100000\n");
    CHECK_EQ(read_cpu_max(p, &t), 0);
    write_file(p, "50000 100000\n");
    CHECK_EQ(read_cpu_max(p, &t), 1);
    CHECK_EQ(read_cpu_max("/nonexistent/cpu.max", &t), 0);
    snprintf(p, sizeof p, "%s/cpu.cfs_quota_us", dir);
    snprintf(q, sizeof q, "%s/cpu.cfs_period_us", dir);
    write_file(p, "250000\n");
    write_file(q, "100000\n");
    CHECK_EQ(read_cfs(dir, &t), 3);
    write_file(p, "-1\n");
    CHECK_EQ(read_cfs(dir, &t), 0);
    remove(p);
    remove(q);
    snprintf(p, sizeof p, "%s/cpu.max", dir);
    remove(p);
    rmdir(dir);
    CHECK_EQ(min_limit(0, 4), 4);
    CHECK_EQ(min_limit(3, 4), 3);
    CHECK(cgroup_cpu_limit(&t) >= 0);
    CHECK(!t);
    CHECK(pa_open_sys_file("/nonexistent/memory.max", &t) == NULL && !t);
}

/* ---- stream task errors ---- */

static int g_freed;
static void count_free(void *p) {
    (void)p;
    __atomic_add_fetch(&g_freed, 1, __ATOMIC_SEQ_CST);
}
static int task_fail(void *p) {
    return pa_fail((int)(intptr_t)p, "test task: failing with %d on purpose", (int)(intptr_t)p);
}
static int g_ran;
static int task_ok(void *p) {
    (void)p;
    __atomic_add_fetch(&g_ran, 1, __ATOMIC_SEQ_CST);
    return 0;
}
static int task_fail_silent(void *p) {
    (void)p;
    return 561000;
}

static void pf_body(void *p, int64_t b, int64_t e) {
    atomic_int *h = p;
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&h[i], 1);
}
static int task_parallel(void *p) {
    pa_parallel_for(4096, 16, pf_body, p);
    return 0;
}

static void test_stream_errors(void) {
    g_freed = 0;
    CHECK_EQ(pa_stream_submit(NULL, task_ok, count_free, NULL), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_EQ(g_freed, 1); /* free_fn called on a submission error */
    CHECK_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtStream s;
    CHECK_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    g_ran = 0;
    g_freed = 0;
    CHECK_EQ(pa_stream_submit(s, task_ok, count_free, NULL), ACL_SUCCESS);
    CHECK_EQ(pa_stream_submit(s, task_fail, count_free, (void *)(intptr_t)161002), ACL_SUCCESS);
    CHECK_EQ(pa_stream_submit(s, task_fail, count_free, (void *)(intptr_t)361001), ACL_SUCCESS);
    CHECK_EQ(pa_stream_submit(s, task_ok, count_free, NULL), ACL_SUCCESS);
    pa_set_errmsg_raw(NULL);
    CHECK_EQ(aclrtSynchronizeStream(s), 161002); /* the first error */
    CHECK(strstr(aclGetRecentErrMsg(), "failing with 161002") != NULL);
    CHECK_EQ(g_ran, 2); /* tasks after the failure still ran */
    CHECK_EQ(g_freed, 4);
    CHECK_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS); /* cleared */
    CHECK_EQ(pa_stream_submit(s, task_fail_silent, NULL, NULL), ACL_SUCCESS);
    CHECK_EQ(aclrtSynchronizeDevice(), 561000);
    CHECK(strstr(aclGetRecentErrMsg(), "561000") != NULL);
    /* submission to a destroyed stream */
    CHECK_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    g_freed = 0;
    CHECK_EQ(pa_stream_submit(s, task_ok, count_free, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK_EQ(g_freed, 1);

    /* kernels (parallel_for) running on two streams at once */
    pa_set_num_threads(3);
    aclrtStream s1, s2;
    CHECK_EQ(aclrtCreateStream(&s1), ACL_SUCCESS);
    CHECK_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    static atomic_int h1[4096], h2[4096];
    for (int r = 0; r < 20; r++) {
        CHECK_EQ(pa_stream_submit(s1, task_parallel, NULL, h1), ACL_SUCCESS);
        CHECK_EQ(pa_stream_submit(s2, task_parallel, NULL, h2), ACL_SUCCESS);
    }
    CHECK_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    for (int i = 0; i < 4096; i++) {
        CHECK_EQ(atomic_load(&h1[i]), 20);
        CHECK_EQ(atomic_load(&h2[i]), 20);
    }
    CHECK_EQ(aclrtDestroyStream(s1), ACL_SUCCESS);
    pa_set_num_threads(0);
    CHECK_EQ(aclrtResetDevice(0), ACL_SUCCESS); /* tears down s2 and the default stream */
}

static void test_cpu(void) {
    pa_isa det = pa_cpu_detected_isa();
    printf("detected ISA: %s (avx512bf16: %d)\n", pa_isa_name(det), (int)pa_cpu_has_avx512bf16());
    CHECK(pa_cpu_isa() <= det);
    pa_isa x;
    CHECK(pa_isa_parse("avx2", &x) && x == PA_ISA_AVX2);
    CHECK(!pa_isa_parse("sse9", &x));
    CHECK(!pa_cpu_set_cap("sse9"));
    for (int t = PA_ISA_SCALAR; t <= (int)det; t++) {
        CHECK(pa_cpu_set_cap(pa_isa_name((pa_isa)t)));
        CHECK_EQ(pa_cpu_isa(), t);
        CHECK_EQ(pa_cpu_has_avx512bf16(), t == PA_ISA_AVX512BF16);
    }
    CHECK(pa_cpu_set_cap("avx512bf16")); /* clamped (warning) if not supported */
    CHECK_EQ(pa_cpu_isa(), det);
    CHECK(pa_cpu_set_cap(NULL));
    CHECK_EQ(pa_cpu_isa(), det);
}

int main(void) {
    setenv("PYACLNN_NUM_THREADS", "2", 1);
    unsetenv("PYACLNN_MAX_ISA");
    test_thread_count_env();
    test_cgroup_parsing();
    test_scratch();
    test_parallel_for();
    test_concurrent_callers();
    test_stream_errors();
    test_cpu();
    printf("test_runtime_internal: %d checks passed\n", g_checks);
    return 0;
}
