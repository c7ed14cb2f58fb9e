/* Virtual memory management, emulated with the host's own:
 *   aclrtReserveMemAddress  -> an mmap(PROT_NONE) address range, 2 MiB aligned
 *   aclrtMallocPhysical     -> a memfd of the (granularity-rounded) size,
 *                              charged to the device capacity, committed lazily
 *   aclrtMapMem             -> mmap(MAP_SHARED|MAP_FIXED) of the memfd into the
 *                              reserved range, so every mapping of one handle
 *                              sees the same bytes
 * Mapped ranges are device memory for launches, owned by the device of their
 * physical handle (prop->location.id): the memory registry holds each maximal
 * run of adjacent mappings of one device inside a reservation as one range, so
 * a tensor may span chunks mapped one after another (a growing pool). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acl/acl_rt.h"
#include "runtime/pa_capacity.h"
#include "runtime/pa_memreg.h"
#include "runtime/pa_device.h"

#define PA_PHYS_MAGIC 0x50485953u /* "PHYS" */
#define PA_GRAN_1G ((size_t)1 << 30)

typedef struct pa_phys {
    uint32_t magic;
    int fd;
    int device;    /* prop->location.id: whose capacity it was charged to */
    size_t size;   /* rounded to the granularity; what was charged */
    unsigned maps; /* live mappings */
    bool freed;    /* aclrtFreePhysical called while still mapped */
    struct pa_phys *next;
} pa_phys;

typedef struct pa_map {
    uintptr_t va;
    size_t size;
    pa_phys *phys;
    struct pa_map *next; /* sorted by va */
} pa_map;

typedef struct pa_resv {
    uintptr_t base;
    size_t size;
    void *mapping; /* what munmap releases (may start below base) */
    size_t mapping_size;
    pa_map *maps;
    struct pa_resv *next;
} pa_resv;

static pthread_mutex_t g_vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static pa_resv *g_resvs;
static pa_phys *g_phys;

static bool attr_is_1g(aclrtMemAttr a) {
    return a == ACL_HBM_MEM_HUGE1G || a == ACL_HBM_MEM_P2P_HUGE1G || a == ACL_MEM_HUGE1G || a == ACL_MEM_P2P_HUGE1G;
}

/* Device-memory kinds a physical allocation may have. */
static bool attr_is_device(aclrtMemAttr a) {
    switch (a) {
    case ACL_HBM_MEM_HUGE: case ACL_HBM_MEM_NORMAL: case ACL_HBM_MEM_P2P_HUGE: case ACL_HBM_MEM_P2P_NORMAL:
    case ACL_HBM_MEM_HUGE1G: case ACL_HBM_MEM_P2P_HUGE1G: case ACL_MEM_NORMAL: case ACL_MEM_HUGE:
    case ACL_MEM_HUGE1G: case ACL_MEM_P2P_NORMAL: case ACL_MEM_P2P_HUGE: case ACL_MEM_P2P_HUGE1G: return true;
    default: return false;
    }
}

static aclError check_prop(const char *api, const aclrtPhysicalMemProp *prop) {
    if (prop->location.type != ACL_MEM_LOCATION_TYPE_DEVICE) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "%s: prop->location.type must be ACL_MEM_LOCATION_TYPE_DEVICE (1), got %d", api,
                          (int)prop->location.type);
    }
    aclError rc = pa_device_check_id(api, prop->location.id > INT32_MAX ? -1 : (int32_t)prop->location.id);
    if (rc != ACL_SUCCESS) return rc;
    if (!attr_is_device(prop->memAttr)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "%s: prop->memAttr must be a device memory kind (ACL_HBM_MEM_HUGE/NORMAL/HUGE1G, "
                          "ACL_MEM_NORMAL/HUGE/HUGE1G or their P2P forms), got %d",
                          api, (int)prop->memAttr);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
                                                 size_t *granularity) {
    const char *api = "aclrtMemGetAllocationGranularity";
    if (prop == NULL || granularity == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: prop and granularity must not be NULL", api);
    }
    if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: option must be MINIMUM (0) or RECOMMENDED (1), got %d", api,
                          (int)option);
    }
    aclError rc = check_prop(api, prop);
    if (rc != ACL_SUCCESS) return rc;
    *granularity = attr_is_1g(prop->memAttr) ? PA_GRAN_1G : PA_DEVICE_GRANULARITY;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Physical allocations
 * ------------------------------------------------------------------------- */

/* Caller holds g_vmm_mu. */
static pa_phys *phys_find(const void *handle) {
    for (pa_phys *p = g_phys; p != NULL; p = p->next) {
        if (p == handle && !p->freed) return p;
    }
    return NULL;
}

/* Caller holds g_vmm_mu; p has no mappings. */
static void phys_destroy(pa_phys *p) {
    for (pa_phys **pp = &g_phys; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    close(p->fd);
    pa_capacity_uncharge(p->device, p->size);
    p->magic = 0;
    free(p);
}

PA_API aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                                    uint64_t flags) {
    const char *api = "aclrtMallocPhysical";
    if (handle == NULL || prop == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: handle and prop must not be NULL", api);
    }
    if (size == 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be > 0, got 0", api);
    if (flags != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: flags must be 0, got %llu", api, (unsigned long long)flags);
    }
    if (prop->handleType != ACL_MEM_HANDLE_TYPE_NONE && prop->handleType != ACL_MEM_HANDLE_TYPE_POSIX) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: prop->handleType must be NONE (0) or POSIX (2), got %d", api,
                          (int)prop->handleType);
    }
    if (prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: prop->allocationType must be PINNED (0), got %d", api,
                          (int)prop->allocationType);
    }
    aclError rc = check_prop(api, prop);
    if (rc == ACL_SUCCESS) rc = pa_device_require(api, NULL);
    if (rc != ACL_SUCCESS) return rc;
    const int device = (int)prop->location.id;
    size_t gran = attr_is_1g(prop->memAttr) ? PA_GRAN_1G : PA_DEVICE_GRANULARITY;
    if (size > SIZE_MAX - (gran - 1) || (size + gran - 1) / gran * gran > (size_t)INT64_MAX) {
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: size %zu is too large", api, size);
    }
    size_t bytes = (size + gran - 1) / gran * gran;
    if (!pa_capacity_charge(device, bytes)) return pa_capacity_fail(api, device, bytes);
    pa_phys *p = calloc(1, sizeof *p);
    if (p == NULL) {
        pa_capacity_uncharge(device, bytes);
        return pa_rt_fail_oom(api, "the physical allocation's handle");
    }
    int fd = memfd_create("pyaclnn-physical", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        free(p);
        pa_capacity_uncharge(device, bytes);
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot create a %zu-byte backing object (%s)", api,
                          bytes, strerror(err));
    }
    p->magic = PA_PHYS_MAGIC;
    p->fd = fd;
    p->device = device;
    p->size = bytes;
    pthread_mutex_lock(&g_vmm_mu);
    p->next = g_phys;
    g_phys = p;
    pthread_mutex_unlock(&g_vmm_mu);
    *handle = p;
    return ACL_SUCCESS;
}

/* While mapped, the memory lives on until the last aclrtUnmapMem (as in CANN). */
PA_API aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
    pthread_mutex_lock(&g_vmm_mu);
    pa_phys *p = phys_find(handle);
    if (p == NULL) {
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtFreePhysical: handle %p is not a live aclrtMallocPhysical handle (double free?)",
                          handle);
    }
    if (p->maps > 0) p->freed = true;
    else phys_destroy(p);
    pthread_mutex_unlock(&g_vmm_mu);
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Address reservations
 * ------------------------------------------------------------------------- */

PA_API aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr,
                                       uint64_t flags) {
    const char *api = "aclrtReserveMemAddress";
    if (virPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: virPtr must not be NULL", api);
    if (size == 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be > 0, got 0", api);
    if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: alignment must be 0 or a power of two, got %zu", api,
                          alignment);
    }
    if (expectPtr != NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: expectPtr must be NULL (fixed addresses are not emulated)",
                          api);
    }
    if (flags > 1) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: flags must be 0 or 1 (huge pages), got %llu", api,
                          (unsigned long long)flags);
    }
    aclError rc = pa_device_require(api, NULL);
    if (rc != ACL_SUCCESS) return rc;
    size_t align = alignment > PA_DEVICE_GRANULARITY ? alignment : PA_DEVICE_GRANULARITY;
    if (size > SIZE_MAX / 2 - align) {
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: size %zu is too large", api, size);
    }
    size_t rounded = (size + PA_DEVICE_GRANULARITY - 1) & ~(PA_DEVICE_GRANULARITY - 1);
    size_t span = rounded + align;
    pa_resv *r = calloc(1, sizeof *r);
    if (r == NULL) return pa_rt_fail_oom(api, "the reservation's record");
    void *m = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        int err = errno;
        free(r);
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot reserve %zu bytes of address space (%s)", api,
                          size, strerror(err));
    }
    r->mapping = m;
    r->mapping_size = span;
    r->base = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
    r->size = rounded;
    pthread_mutex_lock(&g_vmm_mu);
    r->next = g_resvs;
    g_resvs = r;
    pthread_mutex_unlock(&g_vmm_mu);
    *virPtr = (void *)r->base;
    return ACL_SUCCESS;
}

PA_API aclError aclrtReleaseMemAddress(void *virPtr) {
    const char *api = "aclrtReleaseMemAddress";
    pthread_mutex_lock(&g_vmm_mu);
    pa_resv **rp = &g_resvs;
    while (*rp != NULL && (*rp)->base != (uintptr_t)virPtr) rp = &(*rp)->next;
    pa_resv *r = *rp;
    if (r == NULL || virPtr == NULL) {
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not the start of a range from aclrtReserveMemAddress",
                          api, virPtr);
    }
    if (r->maps != NULL) {
        size_t n = 0;
        for (pa_map *m = r->maps; m != NULL; m = m->next) n++;
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: %p still has %zu mapped range(s); aclrtUnmapMem them first",
                          api, virPtr, n);
    }
    if (munmap(r->mapping, r->mapping_size) != 0) {
        int err = errno;
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot release %p (munmap: %s); it stays reserved", api,
                          virPtr, strerror(err));
    }
    *rp = r->next;
    pthread_mutex_unlock(&g_vmm_mu);
    free(r);
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Mapping
 * ------------------------------------------------------------------------- */

/* Caller holds g_vmm_mu. The reservation holding [va, va+size), or NULL. */
static pa_resv *resv_containing(uintptr_t va, size_t size) {
    for (pa_resv *r = g_resvs; r != NULL; r = r->next) {
        if (va >= r->base && va - r->base <= r->size && size <= r->size - (va - r->base)) return r;
    }
    return NULL;
}

/* The run of `device`'s mappings adjacent to [va, end) (in r's sorted list),
 * with it: [*lo, *hi). */
static void run_bounds(const pa_resv *r, uintptr_t va, uintptr_t end, int device, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t start = va;
    bool grew = true;
    while (grew) {
        grew = false;
        for (const pa_map *m = r->maps; m != NULL; m = m->next) {
            if (m->phys->device != device) continue;
            if (m->va + m->size == start) { start = m->va; grew = true; }
            if (m->va == end) { end = m->va + m->size; grew = true; }
        }
    }
    *lo = start;
    *hi = end;
}

/* Up to two registry ranges [lo, hi) of one device; empty ones (lo == hi) are skipped. */
typedef struct {
    struct {
        uintptr_t lo, hi;
    } r[2];
    int device;
} ranges2;

static void reg_remove(const ranges2 *x) {
    for (int i = 0; i < 2; i++) {
        if (x->r[i].lo < x->r[i].hi) pa_memreg_remove(x->r[i].lo, PA_MEM_VIRTUAL_MAPPED, NULL);
    }
}

/* Adds x's ranges; all or none (false: out of host memory). */
static bool reg_add(const ranges2 *x) {
    for (int i = 0; i < 2; i++) {
        const uintptr_t lo = x->r[i].lo, hi = x->r[i].hi;
        if (lo < hi && !pa_memreg_add(lo, hi - lo, PA_MEM_VIRTUAL_MAPPED, x->device, NULL)) {
            if (i == 1 && x->r[0].lo < x->r[0].hi) pa_memreg_remove(x->r[0].lo, PA_MEM_VIRTUAL_MAPPED, NULL);
            return false;
        }
    }
    return true;
}

/* Replaces the registry ranges `from` by `to`, or (false: out of host memory)
 * leaves `from` registered. Removing first, so the adds reuse the room just
 * freed and the registry never lists memory that is not mapped. */
static bool reg_replace(const ranges2 *from, const ranges2 *to) {
    reg_remove(from);
    if (reg_add(to)) return true;
    (void)reg_add(from); /* fits where it was (unless other threads took the room: then it stays out, never in) */
    return false;
}

static const int PA_RESERVE_PROT = PROT_NONE;
static const int PA_RESERVE_FLAGS = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE;

PA_API aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags) {
    const char *api = "aclrtMapMem";
    const uintptr_t va = (uintptr_t)virPtr;
    const size_t g = PA_DEVICE_GRANULARITY;
    if (virPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: virPtr must not be NULL", api);
    if (flags != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: flags must be 0, got %llu", api, (unsigned long long)flags);
    }
    if (size == 0 || size % g != 0 || offset % g != 0 || va % g != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "%s: virPtr, size and offset must be multiples of the granularity (%zu) and size > 0, "
                          "got %p, %zu, %zu",
                          api, g, virPtr, size, offset);
    }
    pthread_mutex_lock(&g_vmm_mu);
    aclError rc = ACL_SUCCESS;
    pa_phys *p = phys_find(handle);
    pa_resv *r = resv_containing(va, size);
    pa_map *nm = NULL;
    if (p == NULL) {
        rc = pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: handle %p is not a live aclrtMallocPhysical handle", api, handle);
    } else if (offset > p->size || size > p->size - offset) {
        rc = pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: offset %zu + size %zu exceed the physical allocation (%zu bytes)",
                        api, offset, size, p->size);
    } else if (r == NULL) {
        rc = pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                        "%s: [%p, +%zu) is not inside one range from aclrtReserveMemAddress", api, virPtr, size);
    }
    pa_map **ins = NULL;
    if (rc == ACL_SUCCESS) {
        ins = &r->maps;
        while (*ins != NULL && (*ins)->va < va) ins = &(*ins)->next;
        const pa_map *prev = NULL;
        for (const pa_map *m = r->maps; m != NULL && m->va < va; m = m->next) prev = m;
        if ((prev != NULL && prev->va + prev->size > va) || (*ins != NULL && (*ins)->va < va + size)) {
            const pa_map *c = (prev != NULL && prev->va + prev->size > va) ? prev : *ins;
            rc = pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: [%p, +%zu) overlaps the mapping [%p, +%zu)", api, virPtr,
                            size, (void *)c->va, c->size);
        }
    }
    if (rc == ACL_SUCCESS && (nm = calloc(1, sizeof *nm)) == NULL) rc = pa_rt_fail_oom(api, "the mapping's record");
    if (rc == ACL_SUCCESS &&
        mmap(virPtr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd, (off_t)offset) == MAP_FAILED) {
        rc = pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: mmap failed (%s)", api, strerror(errno));
    }
    if (rc != ACL_SUCCESS) {
        pthread_mutex_unlock(&g_vmm_mu);
        free(nm);
        return rc;
    }
    /* Mapped: now one registry range for the run it joins (its neighbours' ranges
     * merge into it). Only then, so the registry never lists unmapped memory. */
    uintptr_t lo, hi;
    run_bounds(r, va, va + size, p->device, &lo, &hi);
    const ranges2 sides = {{{lo, va}, {va + size, hi}}, p->device}, run = {{{lo, hi}, {0, 0}}, p->device};
    if (!reg_replace(&sides, &run)) {
        /* Back to reserved-only. If even that fails (the process is at its mapping
         * limit), the pages stay mapped, untracked, until aclrtReleaseMemAddress. */
        bool undone = mmap(virPtr, size, PA_RESERVE_PROT, PA_RESERVE_FLAGS, -1, 0) != MAP_FAILED;
        pthread_mutex_unlock(&g_vmm_mu);
        free(nm);
        return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory for the range table%s", api,
                          undone ? "" : " (and the mapping could not be undone: it stays until aclrtReleaseMemAddress)");
    }
    nm->va = va;
    nm->size = size;
    nm->phys = p;
    nm->next = *ins;
    *ins = nm;
    p->maps++;
    pthread_mutex_unlock(&g_vmm_mu);
    return ACL_SUCCESS;
}

PA_API aclError aclrtUnmapMem(void *virPtr) {
    const char *api = "aclrtUnmapMem";
    const uintptr_t va = (uintptr_t)virPtr;
    pthread_mutex_lock(&g_vmm_mu);
    pa_resv *r = virPtr == NULL ? NULL : resv_containing(va, 0);
    pa_map **mp = r == NULL ? NULL : &r->maps;
    while (mp != NULL && *mp != NULL && (*mp)->va != va) mp = &(*mp)->next;
    if (mp == NULL || *mp == NULL) {
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not the start of a range mapped with aclrtMapMem", api,
                          virPtr);
    }
    pa_map *m = *mp;
    const uintptr_t end = va + m->size;
    uintptr_t lo, hi;
    run_bounds(r, va, end, m->phys->device, &lo, &hi);
    /* Out of the registry first (kernels stop accepting it), then the pages go;
     * if either step fails, everything is put back as it was. */
    const ranges2 run = {{{lo, hi}, {0, 0}}, m->phys->device}, sides = {{{lo, va}, {end, hi}}, m->phys->device};
    if (!reg_replace(&run, &sides)) {
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory for the range table; %p stays mapped", api,
                          virPtr);
    }
    if (mmap(virPtr, m->size, PA_RESERVE_PROT, PA_RESERVE_FLAGS, -1, 0) == MAP_FAILED) {
        int err = errno;
        (void)reg_replace(&sides, &run);
        pthread_mutex_unlock(&g_vmm_mu);
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot unmap [%p, +%zu) (mmap: %s); it stays mapped",
                          api, virPtr, m->size, strerror(err));
    }
    *mp = m->next;
    pa_phys *p = m->phys;
    free(m);
    if (--p->maps == 0 && p->freed) phys_destroy(p);
    pthread_mutex_unlock(&g_vmm_mu);
    return ACL_SUCCESS;
}
