/* Ordered maps of address ranges: sorted arrays searched by bisection. Inserts
 * and removals move the tail (cheap for the thousands of live allocations a
 * program holds); lookups, one per tensor per launch, are O(log n).
 * Two maps: the device-accessible ranges (and the freed aclrtMalloc blocks
 * that work queued before their aclrtFree may still use, which keep their
 * addresses until reclaimed), and aclrtMallocHost blocks (which a program may
 * also aclrtHostRegister, so they overlap the first map). */
#include "runtime/pa_memreg.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A white-box test may define this to run its own code after each change of
 * the registry, with the lock released (tests/c/test_vmm_race.c). */
#ifndef PA_MEMREG_AFTER_CHANGE
#define PA_MEMREG_AFTER_CHANGE() ((void)0)
#endif

/* A range, and for a PA_MEM_DEVICE_FREED block its fence (pa_memreg_retire). */
typedef struct mem_slot {
    pa_mem_range r;
    uint64_t fence;
} mem_slot;

typedef struct range_map {
    pthread_mutex_t mu;
    mem_slot *ranges; /* sorted by base, non-overlapping */
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
    case PA_MEM_DEVICE_FREED: return "aclrtMalloc block freed by aclrtFree";
    default: return "range";
    }
}

bool pa_mem_kind_device_accessible(pa_mem_kind kind) { return kind != PA_MEM_HOST && kind != PA_MEM_DEVICE_FREED; }

/* Index of the first range with base > p. Lock held. */
static size_t upper_bound(const range_map *m, uintptr_t p) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].r.base <= p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool contains(const pa_mem_range *r, uintptr_t p) { return p >= r->base && p - r->base < r->size; }

/* The range containing p, or NULL. Lock held. */
static const pa_mem_range *find_locked(const range_map *m, uintptr_t p) {
    size_t i = upper_bound(m, p);
    if (i == 0) return NULL;
    const pa_mem_range *r = &m->ranges[i - 1].r;
    return contains(r, p) ? r : NULL;
}

/* Room for `need` ranges (the table doubles from 256). False: out of host
 * memory, nothing changed. Lock held. */
static bool reserve_locked(range_map *m, size_t need) {
    if (need <= m->cap) return true;
    size_t ncap = m->cap ? m->cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / sizeof *m->ranges) return false;
        ncap *= 2;
    }
    mem_slot *nr = realloc(m->ranges, ncap * sizeof *nr);
    if (nr == NULL) return false;
    m->ranges = nr;
    m->cap = ncap;
    return true;
}

/* Inserts r (which overlaps nothing) in order. Lock held, room reserved. */
static void insert_locked(range_map *m, const pa_mem_range *r) {
    const size_t i = upper_bound(m, r->base);
    memmove(&m->ranges[i + 1], &m->ranges[i], (m->n - i) * sizeof *m->ranges);
    m->ranges[i] = (mem_slot){*r, 0};
    m->n++;
}

bool pa_memreg_add(uintptr_t base, size_t size, pa_mem_kind kind, int device, pa_mem_range *clash) {
    if (clash != NULL) memset(clash, 0, sizeof *clash);
    if (size == 0 || base > UINTPTR_MAX - (size - 1)) return false;
    const uintptr_t last = base + (size - 1);
    bool ok = false;
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, base);
    const pa_mem_range *below = i > 0 ? &m->ranges[i - 1].r : NULL;
    const pa_mem_range *above = i < m->n ? &m->ranges[i].r : NULL;
    if (below != NULL && contains(below, base)) {
        if (clash != NULL) *clash = *below;
    } else if (above != NULL && above->base <= last) {
        if (clash != NULL) *clash = *above;
    } else {
        if (!reserve_locked(m, m->n + 1)) goto out;
        insert_locked(m, &(pa_mem_range){base, size, kind, device});
        ok = true;
    }
out:
    pthread_mutex_unlock(&m->mu);
    if (ok) PA_MEMREG_AFTER_CHANGE();
    return ok;
}

bool pa_memreg_remove(uintptr_t base, pa_mem_kind kind, pa_mem_range *out) {
    bool found = false;
    range_map *m = map_of(kind);
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, base);
    if (i > 0 && m->ranges[i - 1].r.base == base && m->ranges[i - 1].r.kind == kind) {
        if (out != NULL) *out = m->ranges[i - 1].r;
        memmove(&m->ranges[i - 1], &m->ranges[i], (m->n - i) * sizeof *m->ranges);
        m->n--;
        found = true;
    }
    pthread_mutex_unlock(&m->mu);
    if (found) PA_MEMREG_AFTER_CHANGE();
    return found;
}

static bool same_range(const pa_mem_range *a, const pa_mem_range *b) {
    return a->base == b->base && a->size == b->size && a->kind == b->kind && a->device == b->device;
}

/* n ranges sorted by base, each non-empty, not wrapping, not overlapping the next. */
static bool sorted_disjoint(const pa_mem_range *r, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (r[i].size == 0 || r[i].base > UINTPTR_MAX - (r[i].size - 1)) return false;
        if (i + 1 < n && (r[i + 1].base <= r[i].base || r[i + 1].base - r[i].base < r[i].size)) return false;
    }
    return true;
}

bool pa_memreg_replace(const pa_mem_range *from, size_t nfrom, const pa_mem_range *to, size_t nto,
                       pa_mem_range *clash) {
    if (clash != NULL) memset(clash, 0, sizeof *clash);
    for (size_t i = 0; i < nfrom; i++) {
        if (!pa_mem_kind_device_accessible(from[i].kind)) return false;
    }
    for (size_t i = 0; i < nto; i++) {
        if (!pa_mem_kind_device_accessible(to[i].kind)) return false;
    }
    if (!sorted_disjoint(from, nfrom) || !sorted_disjoint(to, nto)) return false;
    range_map *m = &g_device;
    bool ok = false;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < nfrom; i++) { /* each one live, as given */
        const size_t j = upper_bound(m, from[i].base);
        if (j == 0 || !same_range(&m->ranges[j - 1].r, &from[i])) goto out;
    }
    for (size_t i = 0; i < nto; i++) { /* overlapping nothing that stays */
        const uintptr_t last = to[i].base + (to[i].size - 1);
        size_t j = upper_bound(m, to[i].base);
        if (j > 0 && contains(&m->ranges[j - 1].r, to[i].base)) j--;
        for (; j < m->n && m->ranges[j].r.base <= last; j++) {
            bool leaving = false;
            for (size_t k = 0; k < nfrom && !leaving; k++) leaving = same_range(&m->ranges[j].r, &from[k]);
            if (!leaving) {
                if (clash != NULL) *clash = m->ranges[j].r;
                goto out;
            }
        }
    }
    if (!reserve_locked(m, m->n - nfrom + nto)) goto out;
    for (size_t i = nfrom; i-- > 0;) {
        const size_t j = upper_bound(m, from[i].base) - 1;
        memmove(&m->ranges[j], &m->ranges[j + 1], (m->n - j - 1) * sizeof *m->ranges);
        m->n--;
    }
    for (size_t i = 0; i < nto; i++) insert_locked(m, &to[i]);
    ok = true;
out:
    pthread_mutex_unlock(&m->mu);
    if (ok) PA_MEMREG_AFTER_CHANGE();
    return ok;
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
    if (i > 0 && contains(&m->ranges[i - 1].r, base)) r = &m->ranges[i - 1].r;
    else if (i < m->n && m->ranges[i].r.base <= last) r = &m->ranges[i].r;
    if (r != NULL && out != NULL) *out = *r;
    pthread_mutex_unlock(&m->mu);
    return r != NULL;
}

bool pa_memreg_covers_for(uintptr_t p, size_t len, uint64_t ticket, pa_mem_range *range) {
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    const size_t i = upper_bound(m, p);
    const mem_slot *s = i > 0 && contains(&m->ranges[i - 1].r, p) ? &m->ranges[i - 1] : NULL;
    const bool ok = s != NULL && len <= s->r.size - (p - s->r.base) &&
                    (s->r.kind != PA_MEM_DEVICE_FREED || ticket < s->fence);
    if (s != NULL && range != NULL) *range = s->r;
    pthread_mutex_unlock(&m->mu);
    return ok;
}

bool pa_memreg_covers(uintptr_t p, size_t len, pa_mem_range *range) {
    return pa_memreg_covers_for(p, len, UINT64_MAX, range);
}

bool pa_memreg_retire(uintptr_t base, uint64_t (*fence_now)(void), pa_mem_range *out, uint64_t *fence) {
    bool found = false;
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    const size_t i = upper_bound(m, base);
    if (i > 0 && m->ranges[i - 1].r.base == base && m->ranges[i - 1].r.kind == PA_MEM_DEVICE) {
        mem_slot *s = &m->ranges[i - 1];
        s->r.kind = PA_MEM_DEVICE_FREED;
        s->fence = fence_now(); /* read now: every check that saw the block live is older */
        if (out != NULL) *out = s->r;
        if (fence != NULL) *fence = s->fence;
        found = true;
    }
    pthread_mutex_unlock(&m->mu);
    if (found) PA_MEMREG_AFTER_CHANGE();
    return found;
}

size_t pa_memreg_reclaim(uint64_t done, pa_mem_range *out, size_t cap, uint64_t *lowest) {
    uint64_t low = UINT64_MAX;
    size_t taken = 0, kept = 0;
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++) { /* one pass, keeping the order */
        const mem_slot *s = &m->ranges[i];
        if (s->r.kind == PA_MEM_DEVICE_FREED) {
            if (s->fence <= done && taken < cap) {
                out[taken++] = s->r;
                continue;
            }
            if (s->fence < low) low = s->fence;
        }
        if (kept != i) m->ranges[kept] = *s;
        kept++;
    }
    m->n = kept;
    pthread_mutex_unlock(&m->mu);
    if (lowest != NULL) *lowest = low;
    if (taken > 0) PA_MEMREG_AFTER_CHANGE();
    return taken;
}

bool pa_memreg_nearest(uintptr_t p, pa_mem_range *out) {
    bool found = false;
    range_map *m = &g_device;
    pthread_mutex_lock(&m->mu);
    size_t i = upper_bound(m, p);
    const pa_mem_range *lo = i > 0 ? &m->ranges[i - 1].r : NULL;
    const pa_mem_range *hi = i < m->n ? &m->ranges[i].r : NULL;
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
        if (m->ranges[i].r.kind == kind) {
            n++;
            total += m->ranges[i].r.size;
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (bytes != NULL) *bytes = total;
    return n;
}
