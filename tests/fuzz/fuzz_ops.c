/* Argument fuzzer for the four ops (and four of the tensor plumbing ops torch_npu
 * uses: aclnnInplaceCopy, aclnnAdd, aclnnConstantPadNd, aclnnCat): random (often malformed) tensors and attributes
 * into GetWorkspaceSize and, when accepted, launch + synchronize.
 *
 *   fuzz_ops [--seed S] [--cases N] [--first I] [--verbose] [--no-fork] [--avoid KIND,...]
 *
 * Case i draws everything from its own generator (seed, i), so `--first i
 * --cases 1 --verbose` replays one case. By default the cases run in a child
 * process; if it dies (a crash, or a sanitizer report), the parent records the
 * case and restarts a child at the next case. --avoid leaves out tensor
 * malformations (e.g. one whose bug is still open) without changing the
 * other cases' draws.
 *
 * Data pointers are always memory this program owns (aclrtMalloc, sized from
 * the storage dims it declares), except in the cases that deliberately test bad
 * addresses (NULL data, an allocation smaller than the declared storage, a
 * pointer into the middle of an allocation); those are tagged so that a launch
 * that reads or writes outside the allocation (its size rounded up to 32 bytes
 * plus 32, as aclrtMalloc documents) and still succeeds is counted.
 *
 * Exit status 0 iff: no crash, no accepted view reaching past its declared
 * storage, and no successful launch on a tensor whose view leaves its memory. */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_cat.h"
#include "aclnnop/aclnn_constant_pad_nd.h"
#include "aclnnop/aclnn_copy.h"
#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

#define MAX_RANK 9          /* one more than the library's limit */
#define MAX_ALLOC (8u << 20) /* bytes; larger declared storage becomes a bad-address case */
#define MAX_WORKSPACE (256u << 20)
#define MAX_T 12

/* ---- counters, shared with the parent through an anonymous shared mapping ---- */

typedef enum { OP_SMSB, OP_SMSF, OP_NSAG, OP_NSAF, OP_COPY, OP_ADD, OP_PAD, OP_CAT, NOPS } op_id;
static const char *const g_op_names[NOPS] = {"ScaledMaskedSoftmaxBackward", "ScaledMaskedSoftmax",
                                             "NsaSelectedAttentionGrad", "NsaSelectedAttention", "InplaceCopy",
                                             "Add", "ConstantPadNd", "Cat"};

typedef struct {
    uint64_t cases, op_cases[NOPS], op_relaxed[NOPS], op_accepted[NOPS], op_rejected[NOPS], op_ran[NOPS];
    uint64_t create_rejected, gws_accepted, gws_rejected, launched, launch_rejected, sync_ok, sync_error;
    uint64_t accepted_bad_view;    /* accepted a view reaching past its declared storage: must be 0 */
    uint64_t bad_addr_ran_ok;      /* launch + sync succeeded with a view outside its memory: must be 0 */
    uint64_t bad_addr_rejected;    /* ... and the launch or sync refused it (as it should) */
    uint64_t odd_status;           /* GetWorkspaceSize status other than the expected one (gws_status) */
    uint64_t crashes;
    int64_t next_case;             /* the case a child is running */
    int64_t first_crash;
} counters;

static counters *g_c;
static bool g_verbose;

/* ---- random numbers: splitmix64, one stream per case ---- */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t next_u64(rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi] (hi - lo < 2^63) */
static int64_t rnd(rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_u64(r) % (uint64_t)(hi - lo + 1));
}

static bool chance(rng_t *r, int per_mille) { return (int)(next_u64(r) % 1000) < per_mille; }

static int64_t wild_int(rng_t *r) {
    static const int64_t v[] = {0, -1, 1, 2, 3, 7, 16, 64, 127, 128, 129, 4096, 1 << 20, (int64_t)1 << 40,
                                INT32_MAX, (int64_t)INT32_MAX + 1, INT64_MAX / 2, INT64_MAX - 1, INT64_MAX,
                                INT64_MIN, INT64_MIN + 1, -(INT64_MAX / 2)};
    return v[rnd(r, 0, (int64_t)(sizeof v / sizeof v[0]) - 1)];
}

static double wild_double(rng_t *r) {
    static const double v[] = {0.0, -0.0, 1.0, -1.0, 0.125, 1e-300, 5e-324, 1e300, -1e300, 1e39, 3.5e38,
                               INFINITY, -INFINITY, NAN, 65504.0, 1e10};
    return v[rnd(r, 0, (int64_t)(sizeof v / sizeof v[0]) - 1)];
}

/* ---- a tensor description and the memory behind it ---- */

typedef struct {
    const char *name;
    int64_t dims[MAX_RANK], strides[MAX_RANK], storage[MAX_RANK];
    uint64_t ndim, nstorage;
    int64_t offset;
    aclDataType dt;
    aclFormat fmt;
    bool is_null, null_dims, null_strides, null_storage, double_destroy;
    enum { DATA_OWNED, DATA_NULL, DATA_SHORT, DATA_INSIDE } data_kind;
    const char *mut; /* the last malformation applied, or NULL */
    int fill;        /* 0 float-ish, 1 bool, 2 topk indices */
    int64_t topk_blocks;
    /* derived */
    bool bad_view, bad_addr, has_elems;
    void *alloc, *data;
    size_t alloc_bytes;
    aclTensor *t;
} tdesc;

static size_t dtype_size(aclDataType dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
    }
}

/* A valid contiguous description; sometimes a valid non-contiguous one (padded
 * strides, an offset, a multi-dim storage shape). */
static void td_init(rng_t *r, tdesc *d, const char *name, aclDataType dt, int ndim, const int64_t *dims,
                    bool may_pad) {
    memset(d, 0, sizeof *d);
    d->name = name;
    d->dt = dt;
    d->fmt = ACL_FORMAT_ND;
    d->ndim = (uint64_t)ndim;
    int64_t acc = 1;
    const bool pad = may_pad && chance(r, 150);
    for (int i = ndim - 1; i >= 0; i--) {
        d->dims[i] = dims[i];
        d->strides[i] = acc;
        acc *= (dims[i] > 1 ? dims[i] : 1) + (pad && i == ndim - 1 ? rnd(r, 0, 3) : 0);
    }
    d->offset = may_pad && chance(r, 150) ? rnd(r, 1, 5) : 0;
    if (chance(r, 100)) {
        for (int i = 0; i < ndim; i++) d->storage[i] = dims[i];
        d->nstorage = (uint64_t)ndim;
        if (pad || d->offset) { /* make it big enough again */
            d->storage[0] = 1;
            d->nstorage = 1;
            d->storage[0] = acc + d->offset;
        }
    } else {
        d->storage[0] = acc + d->offset;
        d->nstorage = 1;
    }
}

static const char *g_mutation;

/* Tensor malformations by id (for --avoid), in td_mutate's order. */
static const char *const g_kinds[] = {"null-tensor", "null-data", "short-alloc", "inside-pointer", "dtype",
                                      "format", "rank", "dim", "stride", "transpose", "offset", "storage",
                                      "null-array", "destroy-twice"};
#define NKINDS ((int)(sizeof g_kinds / sizeof g_kinds[0]))
static bool g_avoid[NKINDS];

/* One malformation of the description. */
static void td_mutate(rng_t *r, tdesc *d) {
    const int k = (int)rnd(r, 0, NKINDS - 1);
    if (g_avoid[k]) return;
    const int nd = d->ndim > 0 ? (int)d->ndim : 1;
    const int i = (int)rnd(r, 0, nd - 1);
    switch (k) {
    case 0: d->is_null = true; g_mutation = "NULL tensor"; break;
    case 1: d->data_kind = DATA_NULL; g_mutation = "NULL data"; break;
    case 2: d->data_kind = DATA_SHORT; g_mutation = "short allocation"; break;
    case 3: d->data_kind = DATA_INSIDE; g_mutation = "pointer inside allocation"; break;
    case 4: {
        static const int dts[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_INT32, ACL_UINT8, ACL_INT64,
                                  ACL_BOOL, ACL_DOUBLE, ACL_INT16, ACL_COMPLEX64, ACL_DT_UNDEFINED, 29, 1000, -7};
        d->dt = (aclDataType)dts[rnd(r, 0, (int64_t)(sizeof dts / sizeof dts[0]) - 1)];
        g_mutation = "dtype";
        break;
    }
    case 5: {
        static const int fmts[] = {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_NC1HWC0, ACL_FORMAT_FRACTAL_NZ,
                                   ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_UNDEFINED, ACL_FORMAT_NCDHW, 999, -3};
        d->fmt = (aclFormat)fmts[rnd(r, 0, (int64_t)(sizeof fmts / sizeof fmts[0]) - 1)];
        g_mutation = "format";
        break;
    }
    case 6: /* rank */
        if (chance(r, 500) && d->ndim > 0) {
            d->ndim--;
        } else if (d->ndim < MAX_RANK) {
            d->dims[d->ndim] = rnd(r, 1, 3);
            d->strides[d->ndim] = 1;
            d->ndim++;
        } else {
            d->ndim = MAX_RANK;
        }
        if (chance(r, 200)) d->ndim = MAX_RANK;
        g_mutation = "rank";
        break;
    case 7: d->dims[i] = chance(r, 500) ? rnd(r, 0, 2) : wild_int(r); g_mutation = "dim"; break;
    case 8:
        d->strides[i] = chance(r, 300) ? (d->strides[i] == INT64_MIN ? INT64_MAX : -d->strides[i]) : wild_int(r);
        if (chance(r, 300)) d->dims[i] = rnd(r, 1, 3);
        g_mutation = "stride";
        break;
    case 9: /* transpose two strides (often a valid view of the same storage) */
        if (d->ndim >= 2) {
            const int j = (i + 1) % (int)d->ndim;
            const int64_t s = d->strides[i];
            d->strides[i] = d->strides[j];
            d->strides[j] = s;
        }
        g_mutation = "transposed strides";
        break;
    case 10:
        if (chance(r, 500)) {
            if (__builtin_add_overflow(d->offset, rnd(r, -3, 3), &d->offset)) d->offset = INT64_MIN;
        } else {
            d->offset = wild_int(r);
        }
        g_mutation = "offset";
        break;
    case 11: /* storage: too small, empty, negative, huge, overflowing */
        if (chance(r, 400)) {
            d->storage[0] = d->storage[0] > 0 ? d->storage[0] - rnd(r, 1, d->storage[0]) : 0;
            d->nstorage = 1;
        } else if (chance(r, 300)) {
            d->nstorage = (uint64_t)rnd(r, 0, MAX_RANK);
            for (uint64_t j = 0; j < d->nstorage; j++) d->storage[j] = rnd(r, 0, 4);
        } else {
            d->storage[rnd(r, 0, d->nstorage > 0 ? (int64_t)d->nstorage - 1 : 0)] = wild_int(r);
            if (d->nstorage == 0) d->nstorage = 1;
        }
        g_mutation = "storage";
        break;
    case 12:
        if (chance(r, 400)) d->null_dims = true;
        else if (chance(r, 500)) d->null_storage = true;
        else d->null_strides = true; /* NULL strides = contiguous: legal */
        g_mutation = "NULL shape array";
        break;
    default: d->double_destroy = true; g_mutation = "destroyed twice"; break;
    }
    d->mut = g_mutation;
}

/* Exact view/storage arithmetic (in 128 bits) and the memory for it. */
static bool td_build(rng_t *r, tdesc *d) {
    if (d->is_null) return true;
    const size_t es = dtype_size(d->dt) ? dtype_size(d->dt) : 1;
    const uint64_t ndim = d->ndim > MAX_RANK ? MAX_RANK : d->ndim;
    bool dims_ok = true;
    __int128 numel = 1, lo = d->offset, hi = d->offset;
    const int64_t *strides = d->strides;
    int64_t contiguous[MAX_RANK];
    if (d->null_strides) { /* the library's contiguous strides (saturating) */
        __int128 s = 1;
        for (int i = (int)ndim - 1; i >= 0; i--) {
            contiguous[i] = s > INT64_MAX ? INT64_MAX : (int64_t)s;
            s *= d->dims[i] > 1 ? d->dims[i] : 1;
        }
        strides = contiguous;
    }
    for (uint64_t i = 0; i < ndim; i++) {
        if (d->dims[i] < 0) dims_ok = false;
        numel *= d->dims[i] < 0 ? 0 : d->dims[i];
        if (numel > ((__int128)1 << 80)) numel = (__int128)1 << 80;
        if (d->dims[i] > 1) {
            const __int128 span = (__int128)(d->dims[i] - 1) * strides[i];
            if (span < 0) lo += span;
            else hi += span;
        }
    }
    d->has_elems = dims_ok && numel > 0 && !d->null_dims;
    bool storage_ok = !d->null_storage || d->nstorage == 0;
    __int128 storage_elems = 1;
    for (uint64_t i = 0; i < d->nstorage && i < MAX_RANK; i++) {
        if (d->storage[i] < 0) storage_ok = false;
        storage_elems *= d->storage[i] < 0 ? 0 : d->storage[i];
        if (storage_elems > ((__int128)1 << 80)) storage_elems = (__int128)1 << 80;
    }
    if (d->nstorage > MAX_RANK) storage_ok = false;
    /* a view past its storage: what it spans from its offset does not fit (a storage
     * counted from the offset is accepted, as CANN does; the launch then checks the
     * whole range against the allocation: bad_addr below) */
    d->bad_view = d->has_elems && (!storage_ok || lo < 0 || hi - d->offset >= storage_elems);

    /* memory: the declared storage when it can be allocated, else what the view needs */
    __int128 want = storage_ok ? storage_elems * (__int128)es : 0;
    if (want > MAX_ALLOC) want = hi >= 0 && hi < MAX_ALLOC ? (hi + 1) * (__int128)es : 64;
    if (want > MAX_ALLOC) want = 64;
    size_t bytes = (size_t)want;
    if (d->data_kind == DATA_SHORT) bytes = bytes / 2;
    d->alloc_bytes = bytes ? bytes : 1;
    if (aclrtMalloc(&d->alloc, d->alloc_bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return false;
    d->data = d->alloc;
    if (d->data_kind == DATA_NULL) d->data = NULL;
    size_t skip = 0;
    if (d->data_kind == DATA_INSIDE && d->alloc_bytes > es) {
        skip = (size_t)rnd(r, 1, (int64_t)(d->alloc_bytes / es)) * es;
        if (skip >= d->alloc_bytes) skip = d->alloc_bytes - es;
        d->data = (char *)d->alloc + skip;
    }
    /* does the view leave the memory at d->data? aclrtMalloc gives the size
     * rounded up to 32 bytes plus 32 (as CANN documents), all of it usable */
    const size_t usable = ((d->alloc_bytes + 31) & ~(size_t)31) + 32;
    const __int128 avail = d->data == NULL ? 0 : (__int128)(usable - skip);
    d->bad_addr = d->has_elems && (lo < 0 || (hi + 1) * (__int128)es > avail);

    /* contents */
    unsigned char *host = malloc(d->alloc_bytes);
    if (host == NULL) return false;
    const size_t n = d->alloc_bytes / es;
    for (size_t i = 0; i < d->alloc_bytes; i++) host[i] = (unsigned char)next_u64(r);
    if (d->fill == 1) {
        for (size_t i = 0; i < d->alloc_bytes; i++) host[i] &= 1;
    } else if (d->fill == 2 && es == 4) {
        for (size_t i = 0; i < n; i++) {
            int32_t v = d->topk_blocks > 0 ? (int32_t)rnd(r, 0, d->topk_blocks - 1) : 0;
            if (chance(r, 3)) v = (int32_t)wild_int(r);
            memcpy(host + i * 4, &v, 4);
        }
    } else if (d->dt == ACL_FLOAT && es == 4) {
        for (size_t i = 0; i < n; i++) {
            float v = (float)rnd(r, -1000, 1000) / 256.0f;
            memcpy(host + i * 4, &v, 4);
        }
    } else if ((d->dt == ACL_FLOAT16 || d->dt == ACL_BF16) && es == 2) {
        for (size_t i = 0; i < n; i++) { /* small normal values, sign random */
            uint16_t v = d->dt == ACL_FLOAT16 ? (uint16_t)(0x3000 + rnd(r, 0, 0x0fff))
                                              : (uint16_t)(0x3e00 + rnd(r, 0, 0x01ff));
            v |= (uint16_t)(chance(r, 500) ? 0x8000 : 0);
            memcpy(host + i * 2, &v, 2);
        }
    }
    aclError rc = aclrtMemcpy(d->alloc, d->alloc_bytes, host, d->alloc_bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    free(host);
    if (rc != ACL_SUCCESS) return false;

    d->t = aclCreateTensor(d->null_dims ? NULL : d->dims, d->ndim, d->dt, d->null_strides ? NULL : d->strides,
                           d->offset, d->fmt, d->null_storage ? NULL : d->storage, d->nstorage, d->data);
    if (d->t == NULL) {
        g_c->create_rejected++;
        d->is_null = true; /* passed as NULL from here on */
    }
    return true;
}

static void td_free(tdesc *d) {
    if (d->t != NULL) {
        aclDestroyTensor(d->t);
        if (d->double_destroy) aclDestroyTensor(d->t);
    }
    if (d->alloc != NULL) aclrtFree(d->alloc);
    d->t = NULL;
    d->alloc = NULL;
}

static const aclTensor *td_arg(const tdesc *d) { return d->is_null ? NULL : d->t; }

static void print_list(const int64_t *v, uint64_t n) {
    for (uint64_t i = 0; i < n && i < MAX_RANK; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)v[i]);
}

static void describe(const tdesc *d) {
    fprintf(stderr, "    %s%s%s%s: %s", d->name, d->mut ? " (" : "", d->mut ? d->mut : "", d->mut ? ")" : "",
            d->is_null ? "NULL" : "");
    if (!d->is_null) {
        fprintf(stderr, "dt=%d fmt=%d dims=[", (int)d->dt, (int)d->fmt);
        print_list(d->dims, d->ndim);
        fprintf(stderr, "] strides=[");
        print_list(d->strides, d->ndim);
        fprintf(stderr, "]%s offset=%lld storage=[", d->null_strides ? "(NULL)" : "", (long long)d->offset);
        print_list(d->storage, d->nstorage);
        fprintf(stderr, "] data=%d alloc=%zu%s%s", (int)d->data_kind, d->alloc_bytes, d->bad_view ? " BAD-VIEW" : "",
                d->bad_addr ? " BAD-ADDR" : "");
    }
    fprintf(stderr, "\n");
}

/* ---- one case ---- */

#define MAX_TENSORS 12

typedef struct {
    tdesc t[MAX_TENSORS];
    int n;
    op_id id;
    bool relaxed;
    int null_status;   /* the status a NULL required argument must give; 0: none is NULL */
    bool runs_nothing; /* accepted without looking at the inputs, and nothing runs */
    char op[64];
} case_t;

/* Mutates a few tensors of a case (most cases keep every tensor valid). */
static void mutate_some(rng_t *r, case_t *c) {
    if (chance(r, 450)) return;
    const int count = chance(r, 800) ? 1 : (int)rnd(r, 2, 3);
    for (int k = 0; k < count; k++) td_mutate(r, &c->t[rnd(r, 0, c->n - 1)]);
}

static void report_case(int64_t idx, const case_t *c, const char *what, int status) {
    fprintf(stderr, "fuzz_ops: case %lld (%s): %s (status %d, last mutation: %s)\n  last message: %s\n",
            (long long)idx, c->op, what, status, g_mutation ? g_mutation : "none", aclGetRecentErrMsg());
    for (int i = 0; i < c->n; i++) describe(&c->t[i]);
}

typedef aclnnStatus (*launch_fn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

/* After an accepted GetWorkspaceSize: check the views, then launch it (in one
 * of several ways) and synchronize. */
static void after_accept(rng_t *r, int64_t idx, const case_t *c, aclOpExecutor *ex, uint64_t ws, launch_fn launch,
                         launch_fn other, aclrtStream stream) {
    g_c->gws_accepted++;
    g_c->op_accepted[c->id]++;
    bool bad_view = false, bad_addr = false;
    for (int i = 0; i < c->n && !c->runs_nothing; i++) {
        if (c->t[i].is_null) continue;
        bad_view |= c->t[i].bad_view;
        bad_addr |= c->t[i].bad_addr;
    }
    if (bad_view) {
        g_c->accepted_bad_view++;
        report_case(idx, c, "ACCEPTED a view reaching past its declared storage", 0);
        aclDestroyAclOpExecutor(ex); /* never run it: it would touch memory we do not own */
        return;
    }
    if (g_verbose) report_case(idx, c, "accepted", 0);
    if (chance(r, 80) || ws > MAX_WORKSPACE) {
        aclDestroyAclOpExecutor(ex);
        return;
    }
    void *wsp = NULL;
    if (ws > 0 && aclrtMalloc(&wsp, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        aclDestroyAclOpExecutor(ex);
        return;
    }
    const int how = (int)rnd(r, 0, 19);
    int launches = 1;
    if (how == 0) { /* repeatable: launch twice */
        aclSetAclOpExecutorRepeatable(ex);
        launches = 2;
    }
    aclrtStream s = how == 1 ? NULL : stream;
    aclrtStream dead = NULL;
    if (how == 2 && aclrtCreateStream(&dead) == ACL_SUCCESS) {
        aclrtDestroyStream(dead);
        s = dead; /* a destroyed stream: the launch must fail cleanly */
    }
    bool rejected = false;
    for (int k = 0; k < launches; k++) {
        aclnnStatus st;
        if (how == 3 && ws > 0) st = launch(wsp, ws - 1, ex, s);
        else if (how == 4 && ws > 0) st = launch(NULL, ws, ex, s);
        else if (how == 5) st = other(wsp, ws, ex, s);
        else st = launch(wsp, ws, ex, s);
        g_c->launched++;
        if (st != ACLNN_SUCCESS) {
            g_c->launch_rejected++;
            rejected = true;
        }
    }
    const bool on_dead = dead != NULL && s == dead;
    aclError sr = aclrtSynchronizeStream(stream);
    if (!on_dead && s != stream) {
        const aclError sr2 = aclrtSynchronizeStream(s);
        if (sr == ACL_SUCCESS) sr = sr2;
    }
    if (g_verbose) {
        fprintf(stderr, "  launch kind %d x%d: %s; synchronize %d\n", how, launches, rejected ? "rejected" : "ok",
                (int)sr);
    }
    if (sr == ACL_SUCCESS) g_c->sync_ok++;
    else g_c->sync_error++;
    g_c->op_ran[c->id] += !rejected && sr == ACL_SUCCESS;
    if (bad_addr) {
        if (!rejected && sr == ACL_SUCCESS) {
            g_c->bad_addr_ran_ok++;
            report_case(idx, c, "a launch on a view outside its memory SUCCEEDED", 0);
        } else {
            g_c->bad_addr_rejected++;
        }
    }
    aclDestroyAclOpExecutor(ex); /* 0 if still live, 161002 if the launch consumed it */
    if (wsp != NULL) aclrtFree(wsp);
}

/* Counts GetWorkspaceSize's refusal; a status other than the expected one
 * (c->null_status when a required argument is NULL, else 161002) is odd. */
static void gws_status(int64_t idx, const case_t *c, aclnnStatus st) {
    g_c->gws_rejected++;
    g_c->op_rejected[c->id]++;
    const bool odd = st != (c->null_status ? c->null_status : ACLNN_ERR_PARAM_INVALID);
    g_c->odd_status += odd;
    if (odd && g_c->odd_status <= 10) report_case(idx, c, "unexpected GetWorkspaceSize status", st);
    else if (g_verbose) report_case(idx, c, "rejected", st);
}

/* GetWorkspaceSize returned st: launch what it accepted, count what it refused. */
static void gws_done(rng_t *r, int64_t idx, case_t *c, aclnnStatus st, aclOpExecutor *ex, uint64_t ws,
                     launch_fn launch, launch_fn other, aclrtStream stream) {
    if (st == ACLNN_SUCCESS && c->null_status) {
        g_c->odd_status++;
        report_case(idx, c, "ACCEPTED with a NULL required argument", st);
        if (ex != NULL) aclDestroyAclOpExecutor(ex);
    } else if (st == ACLNN_SUCCESS && ex != NULL) {
        after_accept(r, idx, c, ex, ws, launch, other, stream);
    } else if (st == ACLNN_SUCCESS) {
        report_case(idx, c, "accepted with a NULL executor pointer", st);
    } else {
        gws_status(idx, c, st);
    }
}

/* Starts a case: the op, and its tensors' names (the caller draws their shapes). */
static void case_begin(case_t *c, op_id id, bool relaxed) {
    memset(c, 0, sizeof *c);
    c->id = id;
    c->relaxed = relaxed;
    snprintf(c->op, sizeof c->op, "%s%s", g_op_names[id], relaxed ? " (relaxed)" : "");
    g_c->op_cases[id]++;
    g_c->op_relaxed[id] += relaxed;
}

static bool build_all(rng_t *r, case_t *c) {
    bool ok = true;
    for (int i = 0; i < c->n; i++) ok &= td_build(r, &c->t[i]);
    return ok;
}

static void free_all(case_t *c) {
    for (int i = 0; i < c->n; i++) td_free(&c->t[i]);
}

/* ---- scaled masked softmax (forward and backward) ---- */

typedef struct {
    aclDataType dt;
    int64_t shape[4], mshape[4]; /* [B,N,S1,S2]; the mask's broadcasts B and N */
    double scale;
    bool triu;
} smsx_draw;

static void smsx_shapes(rng_t *r, smsx_draw *s) {
    static const aclDataType fdt[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    s->dt = fdt[rnd(r, 0, 2)];
    const int64_t B = rnd(r, 1, 3), N = rnd(r, 1, 3), S1 = rnd(r, 1, 8);
    const int64_t S2 = chance(r, 30) ? rnd(r, 4090, 4100) : rnd(r, 1, 64); /* sometimes at the 4096 limit */
    const int64_t shape[4] = {B, N, S1, S2};
    const int64_t mshape[4] = {chance(r, 500) ? 1 : B, chance(r, 500) ? 1 : N, S1, S2};
    memcpy(s->shape, shape, sizeof shape);
    memcpy(s->mshape, mshape, sizeof mshape);
}

static void smsx_attrs(rng_t *r, smsx_draw *s) {
    s->scale = chance(r, 900) ? (double)rnd(r, -64, 64) / 16.0 : wild_double(r);
    s->triu = chance(r, 30);
}

static void case_smsb(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_SMSB, false);
    smsx_draw s;
    smsx_shapes(r, &s);
    td_init(r, &c.t[0], "gradOutput", s.dt, 4, s.shape, true);
    td_init(r, &c.t[1], "y", s.dt, 4, s.shape, true);
    td_init(r, &c.t[2], "mask", ACL_BOOL, 4, s.mshape, true);
    td_init(r, &c.t[3], "out", s.dt, 4, s.shape, false);
    c.t[2].fill = 1;
    c.n = 4;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    smsx_attrs(r, &s);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (ws_arg == NULL || ex_arg == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(
            td_arg(&c.t[0]), td_arg(&c.t[1]), td_arg(&c.t[2]), s.scale, s.triu, (aclTensor *)td_arg(&c.t[3]), ws_arg,
            ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnScaledMaskedSoftmaxBackward, aclnnNsaSelectedAttentionGrad, stream);
    }
    free_all(&c);
}

static void case_smsf(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_SMSF, false);
    smsx_draw s;
    smsx_shapes(r, &s);
    td_init(r, &c.t[0], "x", s.dt, 4, s.shape, true);
    td_init(r, &c.t[1], "mask", ACL_BOOL, 4, s.mshape, true);
    td_init(r, &c.t[2], "y", s.dt, 4, s.shape, false);
    c.t[1].fill = 1;
    c.n = 3;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    smsx_attrs(r, &s);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    /* the vendor's order: x, mask, y (561103), then workspaceSize, executor (161001) */
    if (ws_arg == NULL || ex_arg == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    for (int i = 0; i < c.n; i++) c.null_status = td_arg(&c.t[i]) == NULL ? ACLNN_ERR_INNER_NULLPTR : c.null_status;
    if (ok) {
        aclnnStatus st = aclnnScaledMaskedSoftmaxGetWorkspaceSize(td_arg(&c.t[0]), td_arg(&c.t[1]), s.scale, s.triu,
                                                                  (aclTensor *)td_arg(&c.t[2]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnScaledMaskedSoftmax, aclnnNsaSelectedAttention, stream);
    }
    free_all(&c);
}

/* ---- NSA selected attention (forward and grad) ---- */

typedef struct {
    bool relaxed;
    aclDataType dt;
    int64_t D, Dv, B, C, N1, N2, T1, T2, min_blocks;
    int nb;
    int64_t qlen[2], kvlen[2];
} nsa_draw;

/* Shapes that pass (strict limits, or PYACLNN_NSA_RELAXED=1 and tiny ones). */
static void nsa_shapes(rng_t *r, nsa_draw *s) {
    s->relaxed = chance(r, 600);
    setenv("PYACLNN_NSA_RELAXED", s->relaxed ? "1" : "0", 1);
    int64_t G;
    if (s->relaxed) {
        static const aclDataType fdt[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
        s->dt = fdt[rnd(r, 0, 2)];
        s->D = rnd(r, 1, 24);
        s->Dv = rnd(r, 1, 24);
        s->B = rnd(r, 1, 8);
        s->C = rnd(r, 1, 4);
        s->N2 = rnd(r, 1, 2);
        G = rnd(r, 1, 3);
    } else {
        s->dt = chance(r, 500) ? ACL_FLOAT16 : ACL_BF16;
        s->D = chance(r, 700) ? 128 : 192;
        s->Dv = chance(r, 800) || s->D == 128 ? 128 : 192;
        s->B = chance(r, 700) ? 16 : 32;
        s->C = rnd(r, 1, 2);
        s->N2 = 1;
        G = rnd(r, 1, 2);
    }
    s->N1 = s->N2 * G;
    /* batches: KV lengths multiples of B, at least C*B when possible, total <= 64 */
    s->nb = (int)rnd(r, 1, 2);
    s->T1 = s->T2 = 0;
    s->min_blocks = INT64_MAX;
    for (int b = 0; b < s->nb; b++) {
        int64_t blocks = s->C + rnd(r, 0, 2);
        while (blocks > 1 && s->T2 + blocks * s->B > 64) blocks--;
        s->T2 += blocks * s->B;
        s->kvlen[b] = s->T2;
        if (blocks < s->min_blocks) s->min_blocks = blocks;
        s->T1 += rnd(r, 1, MAX_T / s->nb);
        s->qlen[b] = s->T1;
    }
}

typedef struct {
    double scale;
    int64_t block, count, heads, sparse;
    char layout_buf[16];
    char *layout;
    aclIntArray *aq, *akv;
} nsa_attr;

/* The attributes, valid or (in 30% of cases) with one wrong; the seq arrays are
 * optional for the grad, required for the forward. */
static void nsa_attrs(rng_t *r, const nsa_draw *s, bool seq_required, nsa_attr *a) {
    memset(a, 0, sizeof *a);
    a->scale = 1.0 / sqrt((double)s->D);
    a->block = s->B;
    a->count = s->C;
    a->heads = s->N1;
    a->sparse = chance(r, 500) ? 2 : 0;
    strcpy(a->layout_buf, "TND");
    a->layout = a->layout_buf;
    const int nb = s->nb;
    int64_t qv[4], kvv[4];
    uint64_t nq = (uint64_t)nb, nkv = (uint64_t)nb;
    memcpy(qv, s->qlen, sizeof s->qlen);
    memcpy(kvv, s->kvlen, sizeof s->kvlen);
    bool with_seq = seq_required || nb > 1 || chance(r, 500);
    bool one_null = false;
    if (chance(r, 300)) {
        switch (rnd(r, 0, 9)) {
        case 0: a->scale = wild_double(r); g_mutation = "scale"; break;
        case 1: a->block = chance(r, 500) ? rnd(r, -1, 40) : wild_int(r); g_mutation = "block size"; break;
        case 2: a->count = chance(r, 500) ? rnd(r, -1, 6) : wild_int(r); g_mutation = "block count"; break;
        case 3: a->heads = chance(r, 500) ? rnd(r, -1, 5) : wild_int(r); g_mutation = "head num"; break;
        case 4: a->sparse = chance(r, 500) ? rnd(r, -1, 4) : wild_int(r); g_mutation = "sparse mode"; break;
        case 5: {
            static const char *layouts[] = {"BSND", "", "TN", "TNDX", "tnd", "BNSD", "SBH", "TND "};
            if (chance(r, 200)) a->layout = NULL;
            else strcpy(a->layout_buf, layouts[rnd(r, 0, 7)]);
            g_mutation = "layout";
            break;
        }
        case 6: /* a wrong value in one seq array */
            (chance(r, 500) ? qv : kvv)[rnd(r, 0, nb - 1)] = chance(r, 500) ? rnd(r, -2, 70) : wild_int(r);
            with_seq = true;
            g_mutation = "seq value";
            break;
        case 7: /* lengths: 0, unequal, longer */
            nq = (uint64_t)rnd(r, 0, 4);
            if (nq > (uint64_t)nb) for (uint64_t i = (uint64_t)nb; i < nq; i++) qv[i] = qv[nb - 1] + (int64_t)i;
            if (chance(r, 500)) nkv = nq;
            for (uint64_t i = (uint64_t)nb; i < nkv; i++) kvv[i] = kvv[nb - 1] + (int64_t)i * s->B;
            with_seq = true;
            g_mutation = "seq length";
            break;
        case 8: with_seq = true; one_null = true; g_mutation = "one seq array NULL"; break;
        default: with_seq = !with_seq; g_mutation = "seq arrays present/absent"; break;
        }
    }
    if (with_seq) {
        a->aq = aclCreateIntArray(nq ? qv : NULL, nq);
        a->akv = aclCreateIntArray(nkv ? kvv : NULL, nkv);
        if (one_null) {
            if (chance(r, 500)) { aclDestroyIntArray(a->aq); a->aq = NULL; }
            else { aclDestroyIntArray(a->akv); a->akv = NULL; }
        }
    }
}

static void nsa_attrs_free(nsa_attr *a) {
    aclDestroyIntArray(a->aq);
    aclDestroyIntArray(a->akv);
}

/* The attention mask (optional, values never read): BOOL or UINT8, 2-D. */
static void nsa_mask(rng_t *r, tdesc *d) {
    const int64_t ms[2] = {rnd(r, 1, 64), rnd(r, 1, 64)};
    td_init(r, d, "attenMask", chance(r, 500) ? ACL_BOOL : ACL_UINT8, 2, ms, true);
    d->fill = 1;
    d->is_null = chance(r, 700);
}

static void case_nsa(rng_t *r, int64_t idx, aclrtStream stream) {
    nsa_draw s;
    nsa_shapes(r, &s);
    case_t c;
    case_begin(&c, OP_NSAG, s.relaxed);
    const int64_t q[3] = {s.T1, s.N1, s.D}, k[3] = {s.T2, s.N2, s.D}, v[3] = {s.T2, s.N2, s.Dv};
    const int64_t o[3] = {s.T1, s.N1, s.Dv}, st8[3] = {s.T1, s.N1, 8}, tk[3] = {s.T1, s.N2, s.C};
    td_init(r, &c.t[0], "query", s.dt, 3, q, true);
    td_init(r, &c.t[1], "key", s.dt, 3, k, true);
    td_init(r, &c.t[2], "value", s.dt, 3, v, true);
    td_init(r, &c.t[3], "attentionOut", s.dt, 3, o, true);
    td_init(r, &c.t[4], "attentionOutGrad", s.dt, 3, o, true);
    td_init(r, &c.t[5], "softmaxMax", ACL_FLOAT, 3, st8, true);
    td_init(r, &c.t[6], "softmaxSum", ACL_FLOAT, 3, st8, true);
    td_init(r, &c.t[7], "topkIndices", ACL_INT32, 3, tk, true);
    nsa_mask(r, &c.t[8]);
    static const aclDataType odt[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
    td_init(r, &c.t[9], "dq", odt[rnd(r, 0, 2)], 3, q, true);
    td_init(r, &c.t[10], "dk", odt[rnd(r, 0, 2)], 3, k, true);
    td_init(r, &c.t[11], "dv", odt[rnd(r, 0, 2)], 3, v, true);
    c.t[7].fill = 2;
    c.t[7].topk_blocks = s.min_blocks;
    c.n = 12;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    nsa_attr a;
    nsa_attrs(r, &s, false, &a);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (i != 8 && td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (a.layout == NULL || ws_arg == NULL || ex_arg == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnNsaSelectedAttentionGradGetWorkspaceSize(
            td_arg(&c.t[0]), td_arg(&c.t[1]), td_arg(&c.t[2]), td_arg(&c.t[3]), td_arg(&c.t[4]), td_arg(&c.t[5]),
            td_arg(&c.t[6]), td_arg(&c.t[7]), a.aq, a.akv, td_arg(&c.t[8]), a.scale, a.block, a.count, a.heads,
            a.layout, a.sparse, td_arg(&c.t[9]), td_arg(&c.t[10]), td_arg(&c.t[11]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnNsaSelectedAttentionGrad, aclnnScaledMaskedSoftmaxBackward, stream);
    }
    nsa_attrs_free(&a);
    free_all(&c);
}

static void case_nsa_fwd(rng_t *r, int64_t idx, aclrtStream stream) {
    nsa_draw s;
    nsa_shapes(r, &s);
    case_t c;
    case_begin(&c, OP_NSAF, s.relaxed);
    const int64_t q[3] = {s.T1, s.N1, s.D}, k[3] = {s.T2, s.N2, s.D}, v[3] = {s.T2, s.N2, s.Dv};
    const int64_t o[3] = {s.T1, s.N1, s.Dv}, st8[3] = {s.T1, s.N1, 8}, tk[3] = {s.T1, s.N2, s.C};
    td_init(r, &c.t[0], "query", s.dt, 3, q, true);
    td_init(r, &c.t[1], "key", s.dt, 3, k, true);
    td_init(r, &c.t[2], "value", s.dt, 3, v, true);
    td_init(r, &c.t[3], "topkIndices", ACL_INT32, 3, tk, true);
    nsa_mask(r, &c.t[4]);
    td_init(r, &c.t[5], "softmaxMaxOut", ACL_FLOAT, 3, st8, true);
    td_init(r, &c.t[6], "softmaxSumOut", ACL_FLOAT, 3, st8, true);
    td_init(r, &c.t[7], "attentionOut", s.dt, 3, o, true);
    c.t[3].fill = 2;
    c.t[3].topk_blocks = s.min_blocks;
    if (chance(r, 10)) { /* all outputs empty */
        for (int i = 5; i < 8; i++) c.t[i].dims[0] = 0;
    }
    c.n = 8;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    nsa_attr a;
    nsa_attrs(r, &s, true, &a);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (i != 4 && td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_INNER_NULLPTR;
    }
    if (a.aq == NULL || a.akv == NULL || a.layout == NULL || ws_arg == NULL || ex_arg == NULL) {
        c.null_status = ACLNN_ERR_INNER_NULLPTR;
    }
    /* three empty outputs: accepted before any other check, and nothing runs (as the vendor) */
    c.runs_nothing = !c.null_status;
    for (int i = 5; i < 8; i++) c.runs_nothing &= !c.t[i].has_elems;
    if (ok) {
        aclnnStatus st = aclnnNsaSelectedAttentionGetWorkspaceSize(
            td_arg(&c.t[0]), td_arg(&c.t[1]), td_arg(&c.t[2]), td_arg(&c.t[3]), td_arg(&c.t[4]), a.aq, a.akv,
            a.scale, a.heads, a.layout, a.sparse, a.block, a.count, td_arg(&c.t[5]), td_arg(&c.t[6]),
            td_arg(&c.t[7]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnNsaSelectedAttention, aclnnScaledMaskedSoftmax, stream);
    }
    nsa_attrs_free(&a);
    free_all(&c);
}

/* ---- plumbing: aclnnInplaceCopy (broadcast, casts) and aclnnAdd ---- */

static aclDataType plumb_dtype(rng_t *r) {
    static const aclDataType dts[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT8, ACL_BOOL, ACL_INT64};
    return dts[rnd(r, 0, (int64_t)(sizeof dts / sizeof dts[0]) - 1)];
}

/* out's shape, and a shape that broadcasts to it (size-1 and dropped leading dims). */
static int plumb_shapes(rng_t *r, int64_t *out, int64_t *in, int *in_nd) {
    const int nd = (int)rnd(r, 0, 4);
    for (int i = 0; i < nd; i++) out[i] = rnd(r, 1, 9);
    *in_nd = nd - (int)rnd(r, 0, nd);
    for (int i = 0; i < *in_nd; i++) in[i] = chance(r, 250) ? 1 : out[nd - *in_nd + i];
    return nd;
}

static void case_copy(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_COPY, false);
    int64_t out[4], in[4];
    int in_nd;
    const int nd = plumb_shapes(r, out, in, &in_nd);
    td_init(r, &c.t[0], "selfRef", plumb_dtype(r), nd, out, true);
    td_init(r, &c.t[1], "src", plumb_dtype(r), in_nd, in, true);
    c.n = 2;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (ws_arg == NULL || ex_arg == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnInplaceCopyGetWorkspaceSize((aclTensor *)td_arg(&c.t[0]), td_arg(&c.t[1]), ws_arg,
                                                          ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnInplaceCopy, aclnnAdd, stream);
    }
    free_all(&c);
}

static void case_add(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_ADD, false);
    int64_t out[4], in[4];
    int in_nd;
    const int nd = plumb_shapes(r, out, in, &in_nd);
    const aclDataType dt = plumb_dtype(r);
    td_init(r, &c.t[0], "self", dt, nd, out, true);
    td_init(r, &c.t[1], "other", chance(r, 800) ? dt : plumb_dtype(r), in_nd, in, true);
    td_init(r, &c.t[2], "out", chance(r, 900) ? dt : plumb_dtype(r), nd, out, true);
    c.n = 3;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    double av = chance(r, 900) ? (double)rnd(r, -4, 4) : wild_double(r);
    aclScalar *alpha = chance(r, 20) ? NULL : aclCreateScalar(&av, ACL_DOUBLE);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (ws_arg == NULL || ex_arg == NULL || alpha == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnAddGetWorkspaceSize(td_arg(&c.t[0]), td_arg(&c.t[1]), alpha,
                                                  (aclTensor *)td_arg(&c.t[2]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnAdd, aclnnInplaceCopy, stream);
    }
    aclDestroyScalar(alpha);
    free_all(&c);
}

/* aclnnConstantPadNd: self, a pad array (mostly valid: even, small, some
 * negative) and out of the shape it gives (sometimes off by one). */
static void case_pad(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_PAD, false);
    int64_t in[4], out[4], pad[10];
    const int nd = (int)rnd(r, 0, 4);
    for (int i = 0; i < nd; i++) in[i] = rnd(r, 0, 7);
    int np = 2 * (int)rnd(r, 0, nd);
    if (chance(r, 30)) np = (int)rnd(r, 0, 10); /* odd, or longer than twice the rank */
    for (int i = 0; i < np; i++) pad[i] = chance(r, 980) ? rnd(r, -3, 4) : wild_int(r);
    for (int d = 0; d < nd; d++) {
        const int k = 2 * (nd - 1 - d);
        const int64_t lo = k < np ? pad[k] : 0, hi = k + 1 < np ? pad[k + 1] : 0;
        const bool small = lo > -64 && lo < 64 && hi > -64 && hi < 64; /* not a wild pad */
        const int64_t want = small ? in[d] + lo + hi : -1;
        out[d] = want >= 0 && want < 64 ? want : rnd(r, 0, 9);
        if (chance(r, 30)) out[d] = rnd(r, 0, 9);
    }
    const aclDataType dt = plumb_dtype(r);
    td_init(r, &c.t[0], "self", dt, nd, in, true);
    td_init(r, &c.t[1], "out", chance(r, 950) ? dt : plumb_dtype(r), nd, out, true);
    c.n = 2;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    double vv = chance(r, 900) ? (double)rnd(r, -4, 4) : wild_double(r);
    aclScalar *value = chance(r, 20) ? NULL : aclCreateScalar(&vv, ACL_DOUBLE);
    aclIntArray *pa = chance(r, 20) ? NULL : aclCreateIntArray(pad, (uint64_t)np);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (ws_arg == NULL || ex_arg == NULL || value == NULL || pa == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnConstantPadNdGetWorkspaceSize(td_arg(&c.t[0]), pa, value,
                                                            (aclTensor *)td_arg(&c.t[1]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnConstantPadNd, aclnnAdd, stream);
    }
    aclDestroyIntArray(pa);
    aclDestroyScalar(value);
    free_all(&c);
}

/* aclnnCat: 1-4 tensors of one shape outside dim (sometimes not), through an
 * aclTensorList, into out (sometimes of a wrong shape or dtype). */
static void case_cat(rng_t *r, int64_t idx, aclrtStream stream) {
    case_t c;
    case_begin(&c, OP_CAT, false);
    const int nd = (int)rnd(r, 1, 4), n = (int)rnd(r, 1, 4);
    int64_t dim = chance(r, 980) ? rnd(r, -nd, nd - 1) : wild_int(r);
    const int d = (int)(((dim % nd) + nd) % nd);
    int64_t base[4], out[4], shape[4];
    for (int i = 0; i < nd; i++) base[i] = out[i] = rnd(r, 1, 5);
    out[d] = 0;
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < nd; i++) shape[i] = base[i];
        shape[d] = rnd(r, 0, 4);
        if (chance(r, 30)) shape[(int)rnd(r, 0, nd - 1)] = rnd(r, 0, 5);
        out[d] += shape[d];
        static const char *const names[4] = {"tensors[0]", "tensors[1]", "tensors[2]", "tensors[3]"};
        td_init(r, &c.t[k], names[k], plumb_dtype(r), nd, shape, true);
    }
    if (chance(r, 30)) out[(int)rnd(r, 0, nd - 1)] = rnd(r, 0, 9);
    td_init(r, &c.t[n], "out", chance(r, 700) ? ACL_FLOAT : plumb_dtype(r), nd, out, true);
    c.n = n + 1;
    mutate_some(r, &c);
    const bool ok = build_all(r, &c);
    const aclTensor *list[4];
    for (int k = 0; k < n; k++) list[k] = td_arg(&c.t[k]);
    aclTensorList *tl = chance(r, 20) ? NULL : aclCreateTensorList(list, (uint64_t)n);
    uint64_t ws = 0, *ws_arg = chance(r, 5) ? NULL : &ws;
    aclOpExecutor *ex = NULL, **ex_arg = chance(r, 5) ? NULL : &ex;
    for (int i = 0; i < c.n; i++) {
        if (td_arg(&c.t[i]) == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    }
    if (ws_arg == NULL || ex_arg == NULL || tl == NULL) c.null_status = ACLNN_ERR_PARAM_NULLPTR;
    if (ok) {
        aclnnStatus st = aclnnCatGetWorkspaceSize(tl, dim, (aclTensor *)td_arg(&c.t[n]), ws_arg, ex_arg);
        gws_done(r, idx, &c, st, ex, ws, aclnnCat, aclnnAdd, stream);
    }
    if (tl != NULL) { /* destroys the listed tensors too */
        aclDestroyTensorList(tl);
        for (int k = 0; k < n; k++) {
            if (!c.t[k].is_null) c.t[k].t = NULL;
        }
    }
    free_all(&c);
}

static void run_case(uint64_t seed, int64_t idx, aclrtStream stream) {
    rng_t r = {seed * 0x2545f4914f6cdd1dull ^ ((uint64_t)idx * 0x9e3779b97f4a7c15ull)};
    next_u64(&r);
    g_mutation = NULL;
    if (g_verbose) fprintf(stderr, "fuzz_ops: case %lld\n", (long long)idx);
    g_c->cases++;
    const int64_t pick = rnd(&r, 0, 13);
    if (pick < 2) case_smsb(&r, idx, stream);
    else if (pick < 4) case_smsf(&r, idx, stream);
    else if (pick < 7) case_nsa(&r, idx, stream);
    else if (pick < 10) case_nsa_fwd(&r, idx, stream);
    else if (pick < 11) case_copy(&r, idx, stream);
    else if (pick < 12) case_add(&r, idx, stream);
    else if (pick < 13) case_pad(&r, idx, stream);
    else case_cat(&r, idx, stream);
}

/* Runs cases [first, end) in this process. */
static int run_range(uint64_t seed, int64_t first, int64_t end) {
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        fprintf(stderr, "fuzz_ops: runtime init failed: %s\n", aclGetRecentErrMsg());
        return 2;
    }
    aclrtStream stream = NULL;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 2;
    for (int64_t i = first; i < end; i++) {
        g_c->next_case = i;
        run_case(seed, i, stream);
    }
    g_c->next_case = end;
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int64_t cases = 1000, first = 0;
    bool fork_mode = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc) cases = strtoll(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc) first = strtoll(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--verbose") == 0) g_verbose = true;
        else if (strcmp(argv[i], "--no-fork") == 0) fork_mode = false;
        else if (strcmp(argv[i], "--avoid") == 0 && i + 1 < argc) {
            char *list = argv[++i];
            for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
                int k = 0;
                while (k < NKINDS && strcmp(g_kinds[k], tok) != 0) k++;
                if (k == NKINDS) {
                    fprintf(stderr, "fuzz_ops: unknown kind '%s' for --avoid\n", tok);
                    return 2;
                }
                g_avoid[k] = true;
            }
        } else {
            fprintf(stderr,
                    "usage: %s [--seed S] [--cases N] [--first I] [--verbose] [--no-fork] [--avoid KIND,...]\n"
                    "KIND: null-tensor null-data short-alloc inside-pointer dtype format rank dim stride transpose\n"
                    "      offset storage null-array destroy-twice (tensor malformations never to apply)\n",
                    argv[0]);
            return 2;
        }
    }
    g_c = mmap(NULL, sizeof *g_c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_c == MAP_FAILED) return 2;
    memset(g_c, 0, sizeof *g_c);
    g_c->first_crash = -1;
    const int64_t end = first + cases;
    if (!fork_mode) {
        if (run_range(seed, first, end) != 0) return 2;
    } else {
        int64_t at = first;
        while (at < end) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) return 2;
            if (pid == 0) exit(run_range(seed, at, end)); /* exit: LeakSanitizer runs at exit */
            int status = 0;
            if (waitpid(pid, &status, 0) < 0) return 2;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && g_c->next_case == end) break;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return 2;
            g_c->crashes++;
            if (g_c->next_case == end) {
                fprintf(stderr, "fuzz_ops: the child failed at exit (%s %d), e.g. a leak report\n",
                        WIFSIGNALED(status) ? "signal" : "exit status",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
                break;
            }
            if (g_c->first_crash < 0) g_c->first_crash = g_c->next_case;
            fprintf(stderr,
                    "fuzz_ops: CRASH in case %lld (%s %d); replay: --seed %llu --first %lld --cases 1 --verbose\n",
                    (long long)g_c->next_case, WIFSIGNALED(status) ? "signal" : "exit status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), (unsigned long long)seed,
                    (long long)g_c->next_case);
            at = g_c->next_case + 1;
        }
    }
    const counters *c = g_c;
    printf("fuzz_ops: seed %llu, cases %lld..%lld: %llu run\n", (unsigned long long)seed, (long long)first,
           (long long)end - 1, (unsigned long long)c->cases);
    for (int op = 0; op < NOPS; op++) {
        char relaxed[48] = "";
        if (op == OP_NSAG || op == OP_NSAF) {
            snprintf(relaxed, sizeof relaxed, " (%llu relaxed)", (unsigned long long)c->op_relaxed[op]);
        }
        printf("  %-28s %6llu cases%s: GetWorkspaceSize accepted %llu, rejected %llu; ran %llu\n",
               g_op_names[op], (unsigned long long)c->op_cases[op], relaxed, (unsigned long long)c->op_accepted[op],
               (unsigned long long)c->op_rejected[op], (unsigned long long)c->op_ran[op]);
    }
    printf("  aclCreateTensor rejected %llu; GetWorkspaceSize accepted %llu, rejected %llu (%llu with an "
           "unexpected status)\n",
           (unsigned long long)c->create_rejected, (unsigned long long)c->gws_accepted,
           (unsigned long long)c->gws_rejected, (unsigned long long)c->odd_status);
    printf("  launches %llu (rejected %llu); synchronize ok %llu, error %llu; bad-address launches refused %llu\n",
           (unsigned long long)c->launched, (unsigned long long)c->launch_rejected, (unsigned long long)c->sync_ok,
           (unsigned long long)c->sync_error, (unsigned long long)c->bad_addr_rejected);
    printf("accepted views past their storage: %llu\n", (unsigned long long)c->accepted_bad_view);
    printf("bad-address launches that succeeded: %llu\n", (unsigned long long)c->bad_addr_ran_ok);
    printf("crashes: %llu%s\n", (unsigned long long)c->crashes, c->crashes ? " (see above)" : "");
    return c->accepted_bad_view == 0 && c->bad_addr_ran_ok == 0 && c->crashes == 0 ? 0 : 1;
}
