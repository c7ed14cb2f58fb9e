/* Ordered maps of address ranges: sorted arrays searched by bisection. Inserts
 * and removals move the tail (cheap for the thousands of live allocations a
 * program holds); lookups, one per tensor per launch, are O(log n).
 * Two maps: the device-accessible ranges, and aclrtMallocHost blocks (which a
 * program may also aclrtHostRegister, so they overlap the first map). */
#include "runtime/pa_memreg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct range_map {
    pthread_mutex_t mu;
    pa_mem_range *ranges; /* sorted by base, non-overlapping */
    size_t n, cap;
} range_map;

static range_map g_device = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
static range_map g_pinned = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static range_map *map_of(pa_mem_kind kind) { return kind == PA_MEM_HOST ? &g_pinned : &g_device; }

const char *pa_mem_kind_name(pa_mem_kind kind) {
    switch (kind) {
    case PA_MEM_DEVICE: return "aclrtMalloc block";
    case PA_MEM_HOST: return "aclrtMallocHost block";
    case PA_MEM_HOST_REGISTERED: return "aclrtHostRegister range";
    case PA_MEM_VIRTUAL_MAPPED: return "aclrtMapMem mapping";
    default: return "range";
    }
}

bool pa_mem_kind_device_accessible(pa_mem_kind kind) { return kind != PA_MEM_HOST; }

/* Index of the first range with base > p. Lock held. */
static size_t upper_bound(const range_map *m, uintptr_t p) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool contains(const pa_mem_range *r, uintptr_t p) { return p >= r->base && p - r->base < r->size; }

/* The range containing p, or NULL. Lock held. */
static const pa_mem_range *find_locked(const range_map *m, uintptr_t p) {
    size_t i = upper_bound(m, p);
    if (i == 0) return NULL;
    const pa_mem_range *r = &m->ranges[i - 1];
    return contains(r, p) ? r : NULL;
}

bool pa_memreg_add(uintptr_t base, size_t size, pa_mem_kind kind, int device, pa_mem_range *clash) {
    if (clash != NULL) memset(clash, 0, sizeof *clash);
    if (size == 0 || base > UINTPTR_MAX - (size - 1)) return false;
    const uintptr_t last = base + (size - 1);
    bool ok = false;
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, base);
    const pa_mem_range *below = i > 0 ? &m->ranges[i - 1] : NULL;
    const pa_mem_range *above = i < m->n ? &m->ranges[i] : NULL;
    if (below != NULL && contains(below, base)) {
        if (clash != NULL) *clash = *below;
    } else if (above != NULL && above->base <= last) {
        if (clash != NULL) *clash = *above;
    } else {
        if (m->n == m->cap) {
            size_t ncap = m->cap ? m->cap * 2 : 256;
            pa_mem_range *nr = realloc(m->ranges, ncap * sizeof *nr);
            if (nr == NULL) goto out;
            m->ranges = nr;
            m->cap = ncap;
        }
        memmove(&m->ranges[i + 1], &m->ranges[i], (m->n - i) * sizeof *m->ranges);
        m->ranges[i] = (pa_mem_range){base, size, kind, device};
        m->n++;
        ok = true;
    }
out:
    pthread_mutex_unlock(&m->mu);
    return ok;
}

bool pa_memreg_remove(uintptr_t base, pa_mem_kind kind, pa_mem_range *out) {
    bool found = false;
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, base);
    if (i > 0 && m->ranges[i - 1].base == base && m->ranges[i - 1].kind == kind) {
        if (out != NULL) *out = m->ranges[i - 1];
        memmove(&m->ranges[i - 1], &m->ranges[i], (m->n - i) * sizeof *m->ranges);
        m->n--;
        found = true;
    }
    pthread_mutex_unlock(&m->mu);
    return found;
}

bool pa_memreg_find(uintptr_t p, pa_mem_range *out) {
    range_map *maps[2] = {&g_device, &g_pinned};
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&maps[k]->mu);
        const pa_mem_range *r = find_locked(maps[k], p);
        if (r != NULL && out != NULL) *out = *r;
        pthread_mutex_unlock(&maps[k]->mu);
        if (r != NULL) return true;
    }
    return false;
}

bool pa_memreg_range_of(pa_mem_kind kind, uintptr_t p, pa_mem_range *out) {
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    const pa_mem_range *r = find_locked(m, p);
    const bool found = r != NULL && r->kind == kind;
    if (found && out != NULL) *out = *r;
    pthread_mutex_unlock(&m->mu);
    return found;
}

bool pa_memreg_overlap(uintptr_t base, size_t size, pa_mem_range *out) {
    if (size == 0) return false;
    const uintptr_t last = base > UINTPTR_MAX - (size - 1) ? UINTPTR_MAX : base + (size - 1);
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    const size_t i = upper_bound(m, base);
    const pa_mem_range *r = NULL;
    if (i > 0 && contains(&m->ranges[i - 1], base)) r = &m->ranges[i - 1];
    else if (i < m->n && m->ranges[i].base <= last) r = &m->ranges[i];
    if (r != NULL && out != NULL) *out = *r;
    pthread_mutex_unlock(&m->mu);
    return r != NULL;
}

bool pa_memreg_covers(uintptr_t p, size_t len, pa_mem_range *range) {
    pthread_mutex_lock(&g_device.mu);
    const pa_mem_range *r = find_locked(&g_device, p);
    bool ok = r != NULL && len <= r->size - (p - r->base);
    if (r != NULL && range != NULL) *range = *r;
    pthread_mutex_unlock(&g_device.mu);
    return ok;
}

bool pa_memreg_nearest(uintptr_t p, pa_mem_range *out) {
    bool found = false;
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, p);
    const pa_mem_range *lo = i > 0 ? &m->ranges[i - 1] : NULL;
    const pa_mem_range *hi = i < m->n ? &m->ranges[i] : NULL;
    const pa_mem_range *best = lo;
    if (lo == NULL || (!contains(lo, p) && hi != NULL && hi->base - p < p - (lo->base + lo->size - 1))) best = hi;
    if (best != NULL) {
        if (out != NULL) *out = *best;
        found = true;
    }
    pthread_mutex_unlock(&m->mu);
    return found;
}

size_t pa_memreg_count(pa_mem_kind kind, size_t *bytes) {
    size_t n = 0, total = 0;
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++) {
        if (m->ranges[i].kind == kind) {
            n++;
            total += m->ranges[i].size;
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (bytes != NULL) *bytes = total;
    return n;
}
