/* The handle registry (pa_handles.h): an open-addressing hash set of live
 * handle addresses with their kind, and a ring of destroyed handles whose
 * memory is kept until PA_HANDLE_QUARANTINE later destructions. */
#include "meta/pa_handles.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/pa_common.h"

#define SLOT_EMPTY ((uintptr_t)0)
#define SLOT_TOMB ((uintptr_t)1) /* never a malloc result */

typedef struct slot {
    uintptr_t key;
    pa_handle_kind kind;
} slot;

typedef struct parked {
    void *p;
    pa_handle_kind kind;
} parked;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static slot *g_slots;
static size_t g_cap; /* power of two, or 0 */
static size_t g_live, g_tombs;
static size_t g_kind_live[PA_HANDLE_KIND_LAST + 1];
static parked g_ring[PA_HANDLE_QUARANTINE];
static size_t g_ring_head, g_ring_count;

const char *pa_handle_kind_name(pa_handle_kind kind) {
    switch (kind) {
    case PA_HANDLE_TENSOR: return "aclTensor";
    case PA_HANDLE_SCALAR: return "aclScalar";
    case PA_HANDLE_INT_ARRAY: return "aclIntArray";
    case PA_HANDLE_FLOAT_ARRAY: return "aclFloatArray";
    case PA_HANDLE_BOOL_ARRAY: return "aclBoolArray";
    case PA_HANDLE_TENSOR_LIST: return "aclTensorList";
    case PA_HANDLE_SCALAR_LIST: return "aclScalarList";
    case PA_HANDLE_OP_ATTR: return "aclopAttr";
    default: return "handle";
    }
}

static size_t hash_of(uintptr_t key, size_t cap) {
    uint64_t h = (uint64_t)key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)(h & (cap - 1));
}

/* Index of key's slot, or SIZE_MAX. Lock held. */
static size_t find_locked(uintptr_t key) {
    if (g_cap == 0 || key == SLOT_EMPTY || key == SLOT_TOMB) return SIZE_MAX;
    for (size_t j = hash_of(key, g_cap), n = 0; n < g_cap; j = (j + 1) & (g_cap - 1), n++) {
        if (g_slots[j].key == key) return j;
        if (g_slots[j].key == SLOT_EMPTY) break;
    }
    return SIZE_MAX;
}

/* Rebuilds the table with ncap slots (drops tombstones). Lock held. */
static bool rehash_locked(size_t ncap) {
    slot *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL) return false;
    for (size_t i = 0; i < g_cap; i++) {
        const uintptr_t k = g_slots[i].key;
        if (k == SLOT_EMPTY || k == SLOT_TOMB) continue;
        size_t j = hash_of(k, ncap);
        while (ns[j].key != SLOT_EMPTY) j = (j + 1) & (ncap - 1);
        ns[j] = g_slots[i];
    }
    free(g_slots);
    g_slots = ns;
    g_cap = ncap;
    g_tombs = 0;
    return true;
}

bool pa_handle_register(const void *h, pa_handle_kind kind) {
    const uintptr_t key = (uintptr_t)h;
    if (key == SLOT_EMPTY || key == SLOT_TOMB) return false;
    bool ok = true;
    pthread_mutex_lock(&g_mu);
    if ((g_live + g_tombs + 1) * 2 > g_cap) { /* keep the load (tombstones included) <= 1/2 */
        size_t ncap = g_cap ? g_cap : 256;
        while ((g_live + 1) * 4 > ncap) ncap *= 2;
        ok = rehash_locked(ncap);
    }
    if (ok) {
        size_t j = hash_of(key, g_cap);
        while (g_slots[j].key != SLOT_EMPTY && g_slots[j].key != SLOT_TOMB) j = (j + 1) & (g_cap - 1);
        if (g_slots[j].key == SLOT_TOMB) g_tombs--;
        g_slots[j].key = key;
        g_slots[j].kind = kind;
        g_live++;
        g_kind_live[kind]++;
    }
    pthread_mutex_unlock(&g_mu);
    return ok;
}

bool pa_handle_live(const void *h, pa_handle_kind kind) {
    pthread_mutex_lock(&g_mu);
    const size_t j = find_locked((uintptr_t)h);
    const bool live = j != SIZE_MAX && g_slots[j].kind == kind;
    pthread_mutex_unlock(&g_mu);
    return live;
}

/* The error for a handle that is not live of `kind`. Lock held. */
static int fail_locked(const char *api, const char *param, const void *h, pa_handle_kind kind) {
    const char *want = pa_handle_kind_name(kind);
    const size_t j = find_locked((uintptr_t)h);
    if (j != SIZE_MAX) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: %s must be a live %s, got %p, which is a live %s", api, param,
                       want, h, pa_handle_kind_name(g_slots[j].kind));
    }
    for (size_t i = 0; i < g_ring_count; i++) {
        if (g_ring[i].p == h) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "%s: %s must be a live %s, got %p, which was already destroyed (a destroyed %s)", api,
                           param, want, h, pa_handle_kind_name(g_ring[i].kind));
        }
    }
    return pa_fail(ACLNN_ERR_PARAM_INVALID,
                   "%s: %s must be a live %s, got %p, which pyaclnn did not create (or destroyed long ago)", api,
                   param, want, h);
}

int pa_handle_check(const char *api, const char *param, const void *h, pa_handle_kind kind) {
    if (h == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", api, param);
    int rc = ACLNN_SUCCESS;
    pthread_mutex_lock(&g_mu);
    const size_t j = find_locked((uintptr_t)h);
    if (j == SIZE_MAX || g_slots[j].kind != kind) rc = fail_locked(api, param, h, kind);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

int pa_handle_take(const char *api, const char *param, const void *h, pa_handle_kind kind) {
    if (h == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", api, param);
    int rc = ACLNN_SUCCESS;
    pthread_mutex_lock(&g_mu);
    const size_t j = find_locked((uintptr_t)h);
    if (j == SIZE_MAX || g_slots[j].kind != kind) {
        rc = fail_locked(api, param, h, kind);
    } else {
        g_slots[j].key = SLOT_TOMB;
        g_live--;
        g_tombs++;
        g_kind_live[kind]--;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

void pa_handle_retire(void *h, pa_handle_kind kind) {
    void *evicted = NULL;
    pthread_mutex_lock(&g_mu);
    if (g_ring_count == PA_HANDLE_QUARANTINE) {
        evicted = g_ring[g_ring_head].p;
    } else {
        g_ring_count++;
    }
    g_ring[g_ring_head] = (parked){h, kind};
    g_ring_head = (g_ring_head + 1) % PA_HANDLE_QUARANTINE;
    pthread_mutex_unlock(&g_mu);
    free(evicted);
}

void pa_handles_drain(void) {
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_ring_count; i++) {
        free(g_ring[i].p);
        g_ring[i].p = NULL;
    }
    g_ring_count = 0;
    g_ring_head = 0;
    pthread_mutex_unlock(&g_mu);
}

size_t pa_handles_count(pa_handle_kind kind) {
    pthread_mutex_lock(&g_mu);
    size_t n = 0;
    if (kind == 0) n = g_live;
    else if (kind >= PA_HANDLE_TENSOR && kind <= PA_HANDLE_KIND_LAST) n = g_kind_live[kind];
    pthread_mutex_unlock(&g_mu);
    return n;
}
