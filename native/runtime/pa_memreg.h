/* The registry of memory the emulated device may touch, and of host memory the
 * runtime handed out: one ordered map of non-overlapping address ranges.
 *
 * Device-accessible kinds (what a kernel may read or write): aclrtMalloc*
 * blocks, host ranges registered with aclrtHostRegister, and mapped virtual
 * memory (aclrtMapMem). aclrtMallocHost blocks are tracked for aclrtFreeHost
 * but, as in CANN, a kernel may use them only after aclrtHostRegister.
 *
 * Lookups are O(log n) under one mutex; used by aclrtFree*, the launch-time
 * address check of every tensor (meta/executor.c) and the host-register API. */
#ifndef PA_MEMREG_H
#define PA_MEMREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pa_mem_kind {
    PA_MEM_DEVICE = 0,          /* aclrtMalloc, aclrtMallocAlign32, aclrtMallocCached */
    PA_MEM_HOST = 1,            /* aclrtMallocHost (not device-accessible by itself) */
    PA_MEM_HOST_REGISTERED = 2, /* aclrtHostRegister */
    PA_MEM_VIRTUAL_MAPPED = 3,  /* aclrtMapMem into a reserved range */
    PA_MEM_KIND_COUNT
} pa_mem_kind;

typedef struct pa_mem_range {
    uintptr_t base;
    size_t size;
    pa_mem_kind kind;
    int device; /* the owning device; -1 for host memory (any device may use a registered range) */
} pa_mem_range;

const char *pa_mem_kind_name(pa_mem_kind kind);
bool pa_mem_kind_device_accessible(pa_mem_kind kind);

/* Adds [base, base+size), owned by `device` (-1: host memory). Fails (false) if size is 0, the range wraps, it
 * overlaps a live range (*clash gets that range, when clash != NULL), or host
 * memory runs out (clash->size == 0 then). */
bool pa_memreg_add(uintptr_t base, size_t size, pa_mem_kind kind, int device, pa_mem_range *clash);
/* Removes the range of `kind` that starts exactly at base; it goes to *out
 * (may be NULL). False if there is none. */
bool pa_memreg_remove(uintptr_t base, pa_mem_kind kind, pa_mem_range *out);
/* The live range containing address p (any kind). */
bool pa_memreg_find(uintptr_t p, pa_mem_range *out);
/* The live range of `kind` containing p. */
bool pa_memreg_range_of(pa_mem_kind kind, uintptr_t p, pa_mem_range *out);
/* The first live device-accessible range overlapping [base, base+size). */
bool pa_memreg_overlap(uintptr_t base, size_t size, pa_mem_range *out);
/* True if [p, p+len) lies inside one live device-accessible range (len 0:
 * p itself must lie inside one). */
bool pa_memreg_covers(uintptr_t p, size_t len, pa_mem_range *range);
/* The live device-accessible range nearest to p (containing it, or the
 * closest below or above). False if there is none. */
bool pa_memreg_nearest(uintptr_t p, pa_mem_range *out);
/* Live ranges of one kind, and their total size in bytes. */
size_t pa_memreg_count(pa_mem_kind kind, size_t *bytes);

#endif
