/* A structured fuzzer of the conv family (Convolution, Im2col, AvgPool2d,
 * MaxPool, TriangularSolve): mostly valid geometry (so the calls pass the
 * checks and run their kernels), sometimes one attribute or shape off by a
 * little; random dtypes from each list (now and then outside it), the
 * formats the ops want (sometimes others), permuted / padded / offset views
 * over exactly sized storage, outputs that share an input's buffer, random
 * bytes as data (NaNs and infinities included). fuzz_table.c reaches these
 * ops too, but its random arguments almost never pass their shape rules.
 *
 *   cc -std=c11 tests/fuzz/fuzz_conv.c -o fuzz_conv -Iinclude <link line>
 *   fuzz_conv [--seed S] [--cases N] [--verbose]
 *
 * Run it against an ASan+UBSan build of native/ (tests/sanitize/run.sh's
 * flags). Cases run in a child process; exit status 0 iff it did not crash. */
#define _GNU_SOURCE
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
#include "aclnnop/aclnn_avgpool2d.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_im2col.h"
#include "aclnnop/aclnn_max_pool.h"
#include "aclnnop/aclnn_triangular_solve.h"

typedef struct { uint64_t s; } rng_t;
static uint64_t next_u64(rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd(rng_t *r, int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64(r) % (uint64_t)(hi - lo + 1)); }
static bool chance(rng_t *r, int per_mille) { return (int)(next_u64(r) % 1000) < per_mille; }

typedef struct {
    uint64_t cases, accepted, launched, sync_ok, per_op[5];
    int64_t running;
} counters;
static counters *g_c;
static bool g_verbose;

#define MAXT 8
typedef struct {
    aclTensor *t[MAXT];
    void *blocks[MAXT];
    aclIntArray *arr[8];
    int nt, nb, na;
} pool;

static size_t esize(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: return 4;
    case ACL_DOUBLE: case ACL_INT64: return 8;
    case ACL_INT8: return 1;
    default: return 2;
    }
}

static aclDataType pick(rng_t *r, const aclDataType *list, int n) {
    if (chance(r, 30)) {
        static const aclDataType other[] = {ACL_DOUBLE, ACL_INT32, ACL_INT8, ACL_FLOAT16, ACL_FLOAT};
        return other[rnd(r, 0, 4)];
    }
    return list[rnd(r, 0, n - 1)];
}

/* A tensor of shape dims with a random layout over storage of exactly its span;
 * `share` (if not NULL) is a block to put it over instead (an aliased output). */
static aclTensor *tensor(rng_t *r, pool *pl, aclDataType dt, int nd, const int64_t *dims, aclFormat fmt,
                         void *share, void **block) {
    int64_t strides[8], perm[8], pad[8];
    for (int i = 0; i < nd; i++) perm[i] = i, pad[i] = chance(r, 150) ? rnd(r, 1, 3) : 0;
    if (chance(r, 250) && nd >= 2) { /* permuted */
        for (int i = nd - 1; i > 0; i--) {
            int j = (int)rnd(r, 0, i);
            int64_t t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
    }
    int64_t acc = 1, numel = 1;
    for (int k = nd - 1; k >= 0; k--) {
        const int i = (int)perm[k];
        strides[i] = acc;
        acc *= dims[i] + pad[i];
        numel *= dims[i];
    }
    const int64_t offset = chance(r, 200) ? rnd(r, 1, 5) : 0;
    int64_t span = numel == 0 ? 0 : 1;
    for (int i = 0; i < nd; i++) span += dims[i] > 0 ? (dims[i] - 1) * strides[i] : 0;
    int64_t storage = offset + span;
    const size_t bytes = (size_t)(storage > 0 ? storage : 1) * esize(dt);
    void *data = share;
    if (data == NULL) {
        if (aclrtMalloc(&data, bytes + 64, ACL_MEM_MALLOC_NORMAL_ONLY) != ACL_SUCCESS) return NULL;
        uint8_t *p = data;
        const bool tame = chance(r, 700); /* small values (else random bytes) */
        for (size_t k = 0; k < bytes + 64; k++) p[k] = tame && (k % 2 == 0) ? 0 : (uint8_t)next_u64(r);
        if (tame && dt == ACL_FLOAT) {
            for (size_t k = 0; k + 4 <= bytes; k += 4) {
                float f = (float)rnd(r, -8, 8) * 0.25f;
                memcpy(p + k, &f, 4);
            }
        }
        if (tame && dt == ACL_DOUBLE) {
            for (size_t k = 0; k + 8 <= bytes; k += 8) {
                double f = (double)rnd(r, -8, 8) * 0.25 + (k % 72 == 0 ? 8.0 : 0.0);
                memcpy(p + k, &f, 8);
            }
        }
        pl->blocks[pl->nb++] = data;
    } else {
        storage = storage > 1 ? storage : 1; /* over the shared block: as declared by its first user */
    }
    if (block) *block = data;
    aclTensor *t = aclCreateTensor(dims, (uint64_t)nd, dt, strides, offset, fmt, &storage, 1, data);
    if (t) pl->t[pl->nt++] = t;
    if (g_verbose) {
        fprintf(stderr, "  tensor dt %d fmt %d dims", (int)dt, (int)fmt);
        for (int i = 0; i < nd; i++) fprintf(stderr, " %lld/%lld", (long long)dims[i], (long long)strides[i]);
        fprintf(stderr, " offset %lld storage %lld%s\n", (long long)offset, (long long)storage, share ? " shared" : "");
    }
    return t;
}

static aclIntArray *arr(pool *pl, const int64_t *v, int n) {
    aclIntArray *a = aclCreateIntArray(v, (uint64_t)n);
    if (a) pl->arr[pl->na++] = a;
    return a;
}

/* x off by -1, 0 or +1 now and then */
static int64_t jitter(rng_t *r, int64_t x) { return chance(r, 40) ? x + rnd(r, -1, 1) : x; }

static const aclDataType k_float3[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

static int run_conv(rng_t *r, pool *pl, uint64_t *ws, aclOpExecutor **ex) {
    const int sp = (int)rnd(r, 1, 3), nd = sp + 2;
    const bool tr = chance(r, 350);
    const int64_t g = rnd(r, 1, 3), n = chance(r, 50) ? 0 : rnd(r, 1, 2);
    const int64_t cin_g = chance(r, 30) ? 0 : rnd(r, 1, 3), cout_g = rnd(r, 1, 3);
    int64_t in[3], k[3], s[3], p[3], pe[3], d[3], op[3], out[3];
    bool two = !tr && sp <= 2 && chance(r, 300);
    if (tr && sp == 2 && chance(r, 300)) two = true;
    for (int i = 0; i < sp; i++) {
        in[i] = chance(r, 30) ? 0 : rnd(r, 1, 7);
        k[i] = rnd(r, 1, 4), s[i] = rnd(r, 1, 3), d[i] = rnd(r, 1, 3);
        p[i] = rnd(r, 0, 3), pe[i] = two ? rnd(r, 0, 3) : p[i];
        op[i] = tr ? rnd(r, 0, (s[i] > d[i] ? s[i] : d[i]) - 1) : 0;
        if (!tr) {
            if (in[i] + p[i] + pe[i] < d[i] * (k[i] - 1) + 1) in[i] = d[i] * (k[i] - 1) + 1;
            out[i] = (in[i] + p[i] + pe[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
        } else {
            out[i] = (in[i] - 1) * s[i] - p[i] - pe[i] + d[i] * (k[i] - 1) + op[i] + 1;
            if (out[i] < 0) out[i] = 0;
        }
        out[i] = jitter(r, out[i]);
        if (out[i] < 0) out[i] = 0;
    }
    const bool ndhwc = sp == 3 && chance(r, 250);
    const aclFormat fmt = chance(r, 20) ? ACL_FORMAT_ND : sp == 1 ? ACL_FORMAT_NCL
                                                    : sp == 2 ? ACL_FORMAT_NCHW
                                                              : ndhwc ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
    int64_t xd[5], wd[5], yd[5];
    const int64_t cin = cin_g * g, cout = cout_g * g;
    xd[0] = n, yd[0] = n;
    if (!tr) wd[0] = cout, wd[1] = cin_g;
    else wd[0] = cin, wd[1] = cout_g;
    for (int i = 0; i < sp; i++) wd[2 + i] = k[i];
    if (ndhwc) {
        for (int i = 0; i < sp; i++) xd[1 + i] = in[i], yd[1 + i] = out[i];
        xd[4] = jitter(r, cin), yd[4] = cout;
    } else {
        xd[1] = jitter(r, cin), yd[1] = cout;
        for (int i = 0; i < sp; i++) xd[2 + i] = in[i], yd[2 + i] = out[i];
    }
    for (int i = 0; i < nd; i++) xd[i] = xd[i] < 0 ? 0 : xd[i];
    void *xblock = NULL;
    aclTensor *x = tensor(r, pl, pick(r, k_float3, 3), nd, xd, fmt, NULL, &xblock);
    aclTensor *w = tensor(r, pl, pick(r, k_float3, 3), nd, wd, fmt, NULL, NULL);
    aclTensor *b = NULL;
    if (chance(r, 400)) {
        int64_t bd = jitter(r, cout);
        bd = bd < 0 ? 0 : bd;
        b = tensor(r, pl, pick(r, k_float3, 3), 1, &bd, ACL_FORMAT_ND, NULL, NULL);
    }
    aclTensor *y = tensor(r, pl, pick(r, k_float3, 3), nd, yd, fmt, chance(r, 50) ? xblock : NULL, NULL);
    int64_t pv[6], sv[3], dv[3];
    int np = 0;
    for (int i = 0; i < sp; i++) {
        sv[i] = s[i], dv[i] = d[i];
        if (two) pv[np++] = p[i], pv[np++] = pe[i];
        else pv[np++] = p[i];
    }
    const int8_t cube = (int8_t)(chance(r, 50) ? rnd(r, -1, 6) : rnd(r, 0, 4));
    return aclnnConvolutionGetWorkspaceSize(x, w, b, arr(pl, sv, sp), arr(pl, pv, np), arr(pl, dv, sp), tr,
                                            arr(pl, op, sp), g, y, cube, ws, ex);
}

static int run_im2col(rng_t *r, pool *pl, uint64_t *ws, aclOpExecutor **ex) {
    const bool four = chance(r, 600);
    const int64_t n = chance(r, 50) ? 0 : rnd(r, 1, 2), c = rnd(r, 1, 3), h = rnd(r, 1, 8), w = rnd(r, 1, 8);
    int64_t k[2] = {rnd(r, 1, 3), rnd(r, 1, 3)}, d[2] = {rnd(r, 1, 2), rnd(r, 1, 2)}, p[2] = {rnd(r, 0, 2),
                                                                                                rnd(r, 0, 2)},
            s[2] = {rnd(r, 1, 3), rnd(r, 1, 3)};
    const int64_t oh = (h + 2 * p[0] - (d[0] * (k[0] - 1) + 1)) / s[0] + 1;
    const int64_t ow = (w + 2 * p[1] - (d[1] * (k[1] - 1) + 1)) / s[1] + 1;
    int64_t xd[4] = {n, c, h, w}, yd[3] = {n, c * k[0] * k[1], oh > 0 && ow > 0 ? jitter(r, oh * ow) : 0};
    if (yd[2] < 0) yd[2] = 0;
    void *xb = NULL;
    aclTensor *x = four ? tensor(r, pl, pick(r, k_float3, 3), 4, xd, ACL_FORMAT_ND, NULL, &xb)
                        : tensor(r, pl, pick(r, k_float3, 3), 3, xd + 1, ACL_FORMAT_ND, NULL, &xb);
    aclTensor *y = four ? tensor(r, pl, pick(r, k_float3, 3), 3, yd, ACL_FORMAT_ND, chance(r, 50) ? xb : NULL, NULL)
                        : tensor(r, pl, pick(r, k_float3, 3), 2, yd + 1, ACL_FORMAT_ND, NULL, NULL);
    return aclnnIm2colGetWorkspaceSize(x, arr(pl, k, 2), arr(pl, d, 2), arr(pl, p, 2), arr(pl, s, 2), y, ws, ex);
}

static int run_pool(rng_t *r, pool *pl, bool avg, uint64_t *ws, aclOpExecutor **ex) {
    const bool four = chance(r, 700);
    const int64_t n = chance(r, 50) ? 0 : rnd(r, 1, 2), c = rnd(r, 1, 3), h = rnd(r, 1, 9), w = rnd(r, 1, 9);
    int64_t k[2] = {rnd(r, 1, 4), rnd(r, 1, 4)}, s[2] = {rnd(r, 1, 3), rnd(r, 1, 3)};
    int64_t p[4] = {rnd(r, 0, k[0] / 2), rnd(r, 0, k[1] / 2), 0, 0};
    p[2] = avg ? p[0] : rnd(r, 0, k[0] - p[0]);
    p[3] = avg ? p[1] : rnd(r, 0, k[1] - p[1]);
    const bool ceil = chance(r, 400);
    int64_t oh, ow;
    if (avg) {
        oh = (h + 2 * p[0] - k[0] + (ceil ? s[0] - 1 : 0)) / s[0] + 1;
        ow = (w + 2 * p[1] - k[1] + (ceil ? s[1] - 1 : 0)) / s[1] + 1;
    } else {
        oh = (h + p[0] + p[2] - k[0] + (ceil ? s[0] - 1 : 0)) / s[0] + 1;
        ow = (w + p[1] + p[3] - k[1] + (ceil ? s[1] - 1 : 0)) / s[1] + 1;
    }
    if (ceil && (oh - 1) * s[0] >= h + p[0]) oh--;
    if (ceil && (ow - 1) * s[1] >= w + p[1]) ow--;
    oh = jitter(r, oh), ow = jitter(r, ow);
    int64_t xd[4] = {n, c, h, w}, yd[4] = {n, c, oh < 0 ? 0 : oh, ow < 0 ? 0 : ow};
    const aclFormat fmt = chance(r, 30) ? ACL_FORMAT_ND : four ? ACL_FORMAT_NCHW : ACL_FORMAT_NCL;
    static const aclDataType k_max[] = {ACL_FLOAT, ACL_FLOAT16};
    const aclDataType dt = avg ? pick(r, k_float3, 3) : pick(r, k_max, 2);
    void *xb = NULL;
    aclTensor *x = tensor(r, pl, dt, four ? 4 : 3, four ? xd : xd + 1, fmt, NULL, &xb);
    aclTensor *y = tensor(r, pl, chance(r, 30) ? pick(r, k_float3, 3) : dt, four ? 4 : 3, four ? yd : yd + 1, fmt,
                          chance(r, 50) ? xb : NULL, NULL);
    const int nk = chance(r, 200) ? 1 : 2, ns = (int)rnd(r, 0, 2);
    if (nk == 1) k[1] = k[0];
    if (ns == 0) s[0] = avg ? k[0] : 1, s[1] = avg ? k[1] : 1;
    if (avg) {
        const int64_t div = chance(r, 300) ? rnd(r, -3, 5) : 0;
        return aclnnAvgPool2dGetWorkspaceSize(x, arr(pl, k, nk), arr(pl, s, ns), arr(pl, p, 2), ceil,
                                              chance(r, 500), div, (int8_t)rnd(r, 0, 4), y, ws, ex);
    }
    const int64_t one[4] = {1, 1, 1, 1};
    return aclnnMaxPoolGetWorkspaceSize(x, arr(pl, k, nk), arr(pl, s, ns), chance(r, 30) ? 1 : 0, arr(pl, p, 4),
                                        arr(pl, one, (int)rnd(r, 0, 2)), ceil, y, ws, ex);
}

static int run_trisolve(rng_t *r, pool *pl, uint64_t *ws, aclOpExecutor **ex) {
    static const aclDataType k_tri[] = {ACL_FLOAT, ACL_DOUBLE};
    const aclDataType dt = pick(r, k_tri, 2);
    const int64_t m = rnd(r, 0, 6), ncol = rnd(r, 0, 4);
    const int ra = (int)rnd(r, 2, 4), rb = (int)rnd(r, 2, 4), rr = ra > rb ? ra : rb;
    int64_t ad[4], bd[4], xd[4], md[4];
    for (int i = 0; i < rr - 2; i++) {
        const int64_t v = rnd(r, 1, 3);
        xd[i] = md[i] = v;
    }
    for (int i = 0; i < ra - 2; i++) ad[i] = chance(r, 300) ? 1 : xd[i + (rr - ra)];
    for (int i = 0; i < rb - 2; i++) bd[i] = chance(r, 300) ? 1 : xd[i + (rr - rb)];
    /* the broadcast of the (possibly 1) dims */
    for (int i = 0; i < rr - 2; i++) {
        const int64_t a = i - (rr - ra) >= 0 ? ad[i - (rr - ra)] : 1, b = i - (rr - rb) >= 0 ? bd[i - (rr - rb)] : 1;
        xd[i] = md[i] = a > b ? a : b;
    }
    ad[ra - 2] = ad[ra - 1] = m;
    bd[rb - 2] = m, bd[rb - 1] = ncol;
    xd[rr - 2] = m, xd[rr - 1] = jitter(r, ncol);
    md[rr - 2] = md[rr - 1] = m;
    if (xd[rr - 1] < 0) xd[rr - 1] = 0;
    void *bb = NULL, *ab = NULL;
    aclTensor *b = tensor(r, pl, dt, rb, bd, ACL_FORMAT_ND, NULL, &bb);
    aclTensor *a = tensor(r, pl, dt, ra, ad, ACL_FORMAT_ND, NULL, &ab);
    aclTensor *x = tensor(r, pl, dt, rr, xd, ACL_FORMAT_ND, chance(r, 60) ? bb : NULL, NULL);
    aclTensor *mo = chance(r, 300) ? NULL : tensor(r, pl, dt, rr, md, ACL_FORMAT_ND, chance(r, 60) ? ab : NULL, NULL);
    return aclnnTriangularSolveGetWorkspaceSize(b, a, chance(r, 500), chance(r, 500), chance(r, 300), x, mo, ws, ex);
}

static const char *const k_names[5] = {"Convolution", "Im2col", "AvgPool2d", "MaxPool", "TriangularSolve"};
typedef aclnnStatus (*launch_fn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

static void run_case(int64_t c, uint64_t seed, aclrtStream stream) {
    rng_t r = {seed * 0x100000001b3ull + (uint64_t)c * 0x9e3779b97f4a7c15ull};
    pool pl;
    memset(&pl, 0, sizeof pl);
    const int which = (int)(c % 5);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    int rc;
    launch_fn launch;
    switch (which) {
    case 0: rc = run_conv(&r, &pl, &ws, &ex), launch = (launch_fn)aclnnConvolution; break;
    case 1: rc = run_im2col(&r, &pl, &ws, &ex), launch = aclnnIm2col; break;
    case 2: rc = run_pool(&r, &pl, true, &ws, &ex), launch = aclnnAvgPool2d; break;
    case 3: rc = run_pool(&r, &pl, false, &ws, &ex), launch = aclnnMaxPool; break;
    default: rc = run_trisolve(&r, &pl, &ws, &ex), launch = aclnnTriangularSolve; break;
    }
    g_c->cases++;
    if (g_verbose) fprintf(stderr, "case %lld %s: %d %s\n", (long long)c, k_names[which], rc, aclGetRecentErrMsg());
    if (rc == ACLNN_SUCCESS) {
        g_c->accepted++;
        g_c->per_op[which]++;
        if (launch(NULL, ws, ex, stream) == ACLNN_SUCCESS) {
            g_c->launched++;
            if (aclrtSynchronizeStream(stream) == ACL_SUCCESS) {
                g_c->sync_ok++;
            } else if (g_verbose) {
                fprintf(stderr, "  synchronize: %s\n", aclGetRecentErrMsg());
            }
        }
    }
    for (int i = 0; i < pl.nt; i++) aclDestroyTensor(pl.t[i]);
    for (int i = 0; i < pl.na; i++) aclDestroyIntArray(pl.arr[i]);
    for (int i = 0; i < pl.nb; i++) aclrtFree(pl.blocks[i]);
}

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int64_t cases = 20000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--verbose")) g_verbose = true;
        else {
            fprintf(stderr, "usage: %s [--seed S] [--cases N] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    g_c = mmap(NULL, sizeof *g_c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_c == MAP_FAILED) return 2;
    memset(g_c, 0, sizeof *g_c);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) _exit(3);
        aclrtStream stream;
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) _exit(3);
        for (int64_t c = 0; c < cases; c++) {
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
    printf("fuzz_conv: seed %llu, %llu cases: accepted %llu (", (unsigned long long)seed,
           (unsigned long long)g_c->cases, (unsigned long long)g_c->accepted);
    for (int k = 0; k < 5; k++) printf("%s%s %llu", k ? ", " : "", k_names[k], (unsigned long long)g_c->per_op[k]);
    printf("), launched %llu, synchronized ok %llu\n", (unsigned long long)g_c->launched,
           (unsigned long long)g_c->sync_ok);
    if (crashed) {
        printf("crashes: 1 (case %lld, %s; replay with --verbose)\n", (long long)g_c->running,
               k_names[g_c->running % 5]);
        return 1;
    }
    printf("crashes: 0\n");
    return 0;
}
