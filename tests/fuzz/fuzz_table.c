/* The table fuzzer: every operator of the op table (tests/fuzz/fuzz_table.inc,
 * generated from pyaclnn/optable/), round robin, with random arguments:
 * tensors of random dtypes (mostly from the parameter's list), ranks 0-4,
 * dims 0-5, often one shared shape (so the calls get past the shape rules
 * and run their kernels), permuted / broadcast / padded strides, offsets,
 * sometimes malformed (storage too small: must be refused), NULL or with NULL
 * data; scalars, arrays and numbers from small and extreme values. Accepted
 * calls are launched and synchronized. Data is random bytes.
 *
 *   fuzz_table [--seed S] [--cases N] [--first I] [--verbose]
 *
 * Cases run in a child process; a crash (or a sanitizer report) stops the
 * run and names the case. Exit status 0 iff no crash and no accepted view
 * reaching past its declared storage. */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"

/* every generated header */
#define FZ_INCLUDE_ALL
#include "fuzz_table_headers.inc"

typedef union fz_arg {
    aclTensor *t;
    aclTensorList *tl;
    aclScalar *s;
    aclScalarList *sl;
    aclIntArray *ia;
    aclBoolArray *ba;
    aclFloatArray *fa;
    int64_t i;
    double f;
    bool b;
    char *str;
    uint64_t *u;
} fz_arg;

typedef struct fz_op {
    const char *name;
    int nparams;
    const char *kinds; /* T L S s I B F i f b d c u, one per parameter */
    const char *io;    /* i o x */
    const uint64_t *dtypes;
    int (*gws)(const fz_arg *a, uint64_t *ws, aclOpExecutor **ex);
    aclnnStatus (*launch)(void *ws, uint64_t size, aclOpExecutor *ex, aclrtStream stream);
    int implemented;
} fz_op;

#include "fuzz_table.inc"

#define MAXP 48
#define MAXT 64
#define MAX_RANK 4

typedef struct {
    uint64_t cases, accepted, rejected, launched, sync_ok, sync_err, accepted_bad_view, per_op_ok[512];
    int64_t running, crashed_case;
} counters;
static counters *g_c;
static bool g_verbose;

typedef struct { uint64_t s; } rng_t;
static uint64_t next_u64(rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd(rng_t *r, int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64(r) % (uint64_t)(hi - lo + 1)); }
static bool chance(rng_t *r, int per_mille) { return (int)(next_u64(r) % 1000) < per_mille; }

static const aclDataType k_dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8, ACL_UINT8,
                                       ACL_INT16, ACL_UINT16, ACL_INT32, ACL_UINT32, ACL_INT64, ACL_UINT64,
                                       ACL_BOOL, ACL_COMPLEX64, ACL_INT4};
#define NDT ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

static size_t esize(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: case ACL_COMPLEX64: return 8;
    default: return 1;
    }
}

static aclDataType pick_dtype(rng_t *r, uint64_t mask) {
    if (mask && chance(r, 850)) {
        for (int tries = 0; tries < 64; tries++) {
            aclDataType dt = k_dtypes[rnd(r, 0, NDT - 1)];
            if ((mask >> dt) & 1) return dt;
        }
    }
    return k_dtypes[rnd(r, 0, NDT - 1)];
}

/* the case's resources, released at its end */
typedef struct {
    aclTensor *tensors[MAXT];
    void *blocks[MAXT * 2];
    int nt, nb;
    aclScalar *scalars[MAXP * 4];
    int ns;
    void *arrays[MAXP];
    int na;
    aclTensorList *lists[MAXP];
    int nl;
    aclScalarList *slists[MAXP];
    int nsl;
} pool;

/* A tensor over memory this program owns; bad_view says whether its view
 * reaches past the declared storage (GetWorkspaceSize must refuse it). */
static aclTensor *make_tensor(rng_t *r, pool *pl, aclDataType dt, int ndim, const int64_t *dims, bool *bad_view) {
    int64_t strides[MAX_RANK], numel = 1;
    for (int i = 0; i < ndim; i++) numel *= dims[i];
    /* contiguous, permuted, padded or broadcast strides */
    int64_t acc = 1;
    const int mode = (int)rnd(r, 0, 9);
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = acc;
        acc *= dims[i] + (mode == 3 ? 1 : 0);
    }
    if (mode == 1 && ndim >= 2) { /* transposed last two dims */
        int64_t a = dims[ndim - 1], b = dims[ndim - 2];
        strides[ndim - 1] = b;
        strides[ndim - 2] = 1;
        (void)a;
    }
    if (mode == 2 && ndim >= 1) strides[rnd(r, 0, ndim - 1)] = 0; /* broadcast: shared elements */
    int64_t offset = chance(r, 150) ? rnd(r, 0, 4) : 0;
    int64_t extent = numel == 0 ? 0 : 1;
    for (int i = 0; i < ndim; i++) extent += dims[i] > 0 ? (dims[i] - 1) * strides[i] : 0;
    int64_t storage = offset + extent;
    *bad_view = false;
    if (chance(r, 60) && storage > 0) { /* storage too small: a view past its storage */
        storage -= rnd(r, 1, storage);
        /* a storage counted from the offset is accepted (as CANN does) when the span fits */
        *bad_view = numel > 0 && extent > storage;
    }
    if (chance(r, 20)) { /* a negative stride */
        if (ndim > 0 && dims[0] > 1 && strides[0] != 0) {
            strides[0] = -strides[0];
            *bad_view = *bad_view || numel > 0;
        }
    }
    const size_t es = esize(dt);
    const size_t bytes = (size_t)(storage > 0 ? storage : 1) * es + 64;
    void *data = NULL;
    if (!chance(r, 20)) {
        if (aclrtMalloc(&data, bytes, ACL_MEM_MALLOC_NORMAL_ONLY) != ACL_SUCCESS) data = NULL;
        if (data) {
            uint8_t *p = data;
            for (size_t k = 0; k < bytes; k++) p[k] = (uint8_t)next_u64(r);
            /* small non-negative values now and then, so index operands are sometimes valid */
            if (chance(r, 500)) {
                for (size_t k = 0; k < bytes; k++) p[k] = (k % es == 0) ? (uint8_t)rnd(r, 0, 3) : 0;
            }
            pl->blocks[pl->nb++] = data;
        }
    }
    int64_t st = storage;
    aclFormat fmt = chance(r, 30) ? ACL_FORMAT_FRACTAL_NZ : chance(r, 50) ? ACL_FORMAT_NCHW : ACL_FORMAT_ND;
    aclTensor *t = aclCreateTensor(dims, (uint64_t)ndim, dt, strides, offset, fmt, &st, 1, data);
    if (g_verbose) {
        fprintf(stderr, "  tensor dt %d fmt %d ndim %d dims", (int)dt, (int)fmt, ndim);
        for (int i = 0; i < ndim; i++) fprintf(stderr, " %lld/%lld", (long long)dims[i], (long long)strides[i]);
        fprintf(stderr, " offset %lld storage %lld bad %d -> %p\n", (long long)offset, (long long)st, *bad_view,
                (void *)t);
    }
    if (t && pl->nt < MAXT) pl->tensors[pl->nt++] = t;
    return t;
}

static int64_t small_or_wild(rng_t *r) {
    static const int64_t wild[] = {0, -1, 1, 2, 3, 5, -2, -3, 64, 1000, INT32_MAX, INT64_MAX, INT64_MIN, -100};
    return chance(r, 700) ? rnd(r, -2, 4) : wild[rnd(r, 0, (int64_t)(sizeof wild / sizeof wild[0]) - 1)];
}

static double wild_double(rng_t *r) {
    static const double v[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, INFINITY, -INFINITY, NAN, 65504.0};
    return v[rnd(r, 0, (int64_t)(sizeof v / sizeof v[0]) - 1)];
}

static aclScalar *make_scalar(rng_t *r, pool *pl) {
    aclDataType dt = k_dtypes[rnd(r, 0, 12)];
    uint8_t buf[16] = {0};
    double d = wild_double(r);
    int64_t i = small_or_wild(r);
    switch (dt) {
    case ACL_FLOAT: { float f = (float)(isfinite(d) && fabs(d) > 3e38 ? 1.0 : d); memcpy(buf, &f, 4); break; }
    case ACL_DOUBLE: memcpy(buf, &d, 8); break;
    case ACL_FLOAT16: case ACL_BF16: { uint16_t h = (uint16_t)next_u64(r); memcpy(buf, &h, 2); break; }
    case ACL_BOOL: buf[0] = (uint8_t)(i & 1); break;
    default: memcpy(buf, &i, esize(dt)); break;
    }
    aclScalar *s = aclCreateScalar(buf, dt);
    if (s) pl->scalars[pl->ns++] = s;
    return s;
}

static void release(pool *pl) {
    for (int i = 0; i < pl->nl; i++) aclDestroyTensorList(pl->lists[i]); /* lists own their tensors */
    for (int i = 0; i < pl->nsl; i++) aclDestroyScalarList(pl->slists[i]);
    for (int i = 0; i < pl->nt; i++) aclDestroyTensor(pl->tensors[i]);
    for (int i = 0; i < pl->ns; i++) aclDestroyScalar(pl->scalars[i]);
    for (int i = 0; i < pl->na; i++) aclDestroyIntArray(pl->arrays[i]);
    for (int i = 0; i < pl->nb; i++) aclrtFree(pl->blocks[i]);
}

static void run_case(int64_t c, uint64_t seed, aclrtStream stream) {
    rng_t r = {seed * 0x100000001b3ull + (uint64_t)c * 0x9e3779b97f4a7c15ull};
    const fz_op *op = &fz_ops[c % FZ_NOPS];
    pool pl;
    memset(&pl, 0, sizeof pl);
    fz_arg a[MAXP];
    memset(a, 0, sizeof a);
    bool any_bad_view = false;
    /* a shared shape for most tensors */
    int ndim = (int)rnd(&r, 0, MAX_RANK);
    int64_t dims[MAX_RANK];
    for (int i = 0; i < ndim; i++) dims[i] = chance(&r, 60) ? 0 : rnd(&r, 1, 5);
    const bool shared = chance(&r, 700);
    for (int i = 0; i < op->nparams && i < MAXP; i++) {
        const char k = op->kinds[i];
        const bool null = chance(&r, 25);
        switch (k) {
        case 'T': {
            if (null) { a[i].t = NULL; break; }
            int nd = ndim;
            int64_t dd[MAX_RANK];
            memcpy(dd, dims, sizeof dd);
            if (!shared || chance(&r, 200)) {
                nd = (int)rnd(&r, 0, MAX_RANK);
                for (int j = 0; j < nd; j++) dd[j] = rnd(&r, 0, 5);
            }
            bool bad;
            a[i].t = make_tensor(&r, &pl, pick_dtype(&r, op->dtypes[i]), nd, dd, &bad);
            any_bad_view = any_bad_view || bad;
            break;
        }
        case 'L': {
            if (null) break;
            aclTensor *ts[4];
            const int n = (int)rnd(&r, 0, 3);
            aclDataType dt = pick_dtype(&r, op->dtypes[i]);
            for (int j = 0; j < n; j++) {
                bool bad;
                ts[j] = make_tensor(&r, &pl, dt, ndim, dims, &bad);
                any_bad_view = any_bad_view || bad;
                if (ts[j] && pl.nt > 0 && pl.tensors[pl.nt - 1] == ts[j]) pl.nt--; /* the list owns it */
            }
            a[i].tl = aclCreateTensorList((const aclTensor *const *)ts, (uint64_t)n);
            if (a[i].tl) pl.lists[pl.nl++] = a[i].tl;
            break;
        }
        case 'S': a[i].s = null ? NULL : make_scalar(&r, &pl); break;
        case 's': {
            if (null) break;
            aclScalar *ss[2] = {make_scalar(&r, &pl), make_scalar(&r, &pl)};
            pl.ns -= 2; /* owned by the list */
            a[i].sl = aclCreateScalarList((const aclScalar *const *)ss, 2);
            if (a[i].sl) pl.slists[pl.nsl++] = a[i].sl;
            break;
        }
        case 'I': {
            if (null) break;
            int64_t v[8];
            const int n = (int)rnd(&r, 0, 4);
            for (int j = 0; j < n; j++) v[j] = small_or_wild(&r);
            a[i].ia = aclCreateIntArray(v, (uint64_t)n);
            if (a[i].ia) pl.arrays[pl.na++] = a[i].ia;
            break;
        }
        case 'B': {
            bool v[3] = {true, chance(&r, 500), true};
            a[i].ba = null ? NULL : aclCreateBoolArray(v, 3);
            break;
        }
        case 'F': {
            float v[2] = {1.0f, 0.5f};
            a[i].fa = null ? NULL : aclCreateFloatArray(v, 2);
            break;
        }
        case 'i': a[i].i = small_or_wild(&r); break;
        case 'd': a[i].i = (int64_t)k_dtypes[rnd(&r, 0, NDT - 1)]; break;
        case 'f': a[i].f = wild_double(&r); break;
        case 'b': a[i].b = chance(&r, 500); break;
        case 'c': {
            static const char *const strs[] = {"BSND", "TND", "none", "tanh"}; /* layouts, approximate modes */
            a[i].str = null ? NULL : (char *)strs[rnd(&r, 0, 3)];
            break;
        }
        case 'u': { static uint64_t out; a[i].u = null ? NULL : &out; break; }
        default: break;
        }
    }
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const int rc = op->gws(a, &ws, &ex);
    g_c->cases++;
    if (g_verbose) fprintf(stderr, "case %lld %s: %d %s\n", (long long)c, op->name, rc, aclGetRecentErrMsg());
    if (rc == ACLNN_SUCCESS && op->launch != NULL) {
        g_c->accepted++;
        g_c->per_op_ok[c % FZ_NOPS]++;
        if (any_bad_view) {
            g_c->accepted_bad_view++;
            fprintf(stderr, "fuzz_table: case %lld: aclnn%s accepted a view past its storage\n", (long long)c, op->name);
        }
        void *w = NULL;
        if (ws > 0 && ws < (64u << 20)) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_NORMAL_ONLY);
        if (ws == 0 || w != NULL) {
            if (op->launch(w, ws, ex, stream) == ACLNN_SUCCESS) {
                g_c->launched++;
                if (aclrtSynchronizeStream(stream) == ACL_SUCCESS) g_c->sync_ok++;
                else g_c->sync_err++;
            }
        } else {
            aclDestroyAclOpExecutor(ex);
        }
        if (w) aclrtFree(w);
    } else {
        g_c->rejected++;
    }
    release(&pl);
}

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int64_t cases = 20000, first = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--first") && i + 1 < argc) first = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--verbose")) g_verbose = true;
        else {
            fprintf(stderr, "usage: %s [--seed S] [--cases N] [--first I] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    g_c = mmap(NULL, sizeof *g_c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_c == MAP_FAILED) return 2;
    memset(g_c, 0, sizeof *g_c);
    g_c->crashed_case = -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) _exit(3);
        aclrtStream stream;
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) _exit(3);
        for (int64_t c = first; c < first + cases; c++) {
            g_c->running = c;
            run_case(c, seed, stream);
        }
        aclrtDestroyStream(stream);
        aclrtResetDevice(0);
        aclFinalize();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const bool crashed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int reached = 0;
    for (int k = 0; k < FZ_NOPS; k++) reached += g_c->per_op_ok[k] > 0 && fz_ops[k].implemented;
    int implemented = 0;
    for (int k = 0; k < FZ_NOPS; k++) implemented += fz_ops[k].implemented;
    printf("fuzz_table: seed %llu, cases %lld..%lld: %llu run over %d operators\n", (unsigned long long)seed,
           (long long)first, (long long)(first + cases - 1), (unsigned long long)g_c->cases, FZ_NOPS);
    printf("  GetWorkspaceSize accepted %llu, rejected %llu; launched %llu, synchronized ok %llu, with an error %llu\n",
           (unsigned long long)g_c->accepted, (unsigned long long)g_c->rejected, (unsigned long long)g_c->launched,
           (unsigned long long)g_c->sync_ok, (unsigned long long)g_c->sync_err);
    printf("  implemented operators that accepted at least one case: %d of %d\n", reached, implemented);
    printf("accepted views past their storage: %llu\n", (unsigned long long)g_c->accepted_bad_view);
    if (crashed) {
        printf("crashes: 1 (case %lld, %s; replay: --first %lld --cases 1 --verbose)\n", (long long)g_c->running,
               fz_ops[g_c->running % FZ_NOPS].name, (long long)g_c->running);
        return 1;
    }
    printf("crashes: 0\n");
    return g_c->accepted_bad_view == 0 ? 0 : 1;
}
