/* The registry of memory the emulated device may touch, and of host memory the
 * runtime handed out: one ordered map of non-overlapping address ranges.
 *
 * Device-accessible kinds (what a kernel may read or write): aclrtMalloc*
 * blocks, host ranges registered with aclrtHostRegister, and mapped virtual
 * memory (aclrtMapMem). aclrtMallocHost blocks are tracked for aclrtFreeHost
 * but, as in CANN, a kernel may use them only after aclrtHostRegister.
 *
 * Deferred release (memory.c): aclrtFree of a block that queued work may still
 * use retires it (PA_MEM_DEVICE_FREED) instead of removing it. A retired block
 * keeps its addresses (nothing can overlap it, a second aclrtFree does not
 * find it) and carries a fence, a stream task ticket (pa_stream.h): tasks
 * submitted before the free (ticket < fence) still pass the access check on
 * it, later ones do not. pa_memreg_reclaim removes it once every task below
 * the fence has finished.
 *
 * Lookups are O(log n) under one mutex; used by aclrtFree*, the launch-time
 * address check of every tensor (meta/executor.c) and the host-register API.
 * Each call below is atomic for the others. */
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
    PA_MEM_DEVICE_FREED = 4,    /* an aclrtMalloc* block retired by aclrtFree (not device-accessible for new work) */
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
/* Replaces the live ranges from[0..nfrom) (each matched exactly: base, size,
 * kind, device) by to[0..nto) in one step, so no reader sees a state in
 * between (aclrtMapMem / aclrtUnmapMem merging and splitting the ranges of
 * adjacent mappings). Both lists sorted by base, non-overlapping, of
 * device-accessible kinds. All or nothing: false, the registry unchanged, if a
 * `from` range is not live, a `to` range overlaps a live range that stays
 * (*clash gets it, when clash != NULL), or host memory runs out (clash->size
 * == 0 then). */
bool pa_memreg_replace(const pa_mem_range *from, size_t nfrom, const pa_mem_range *to, size_t nto,
                       pa_mem_range *clash);
/* The live range containing address p (any kind). */
bool pa_memreg_find(uintptr_t p, pa_mem_range *out);
/* The live range of `kind` containing p. */
bool pa_memreg_range_of(pa_mem_kind kind, uintptr_t p, pa_mem_range *out);
/* The first live device-accessible range (or retired block) overlapping [base, base+size). */
bool pa_memreg_overlap(uintptr_t base, size_t size, pa_mem_range *out);
/* True if [p, p+len) lies inside one live device-accessible range (len 0:
 * p itself must lie inside one). *range (may be NULL) gets the range holding
 * p, if any, even when the answer is false (it may be a retired block). */
bool pa_memreg_covers(uintptr_t p, size_t len, pa_mem_range *range);
/* pa_memreg_covers for the stream task with this ticket: also true inside a
 * retired block whose fence is above the ticket (the task was submitted
 * before the block's aclrtFree). */
bool pa_memreg_covers_for(uintptr_t p, size_t len, uint64_t ticket, pa_mem_range *range);
/* Retires the live PA_MEM_DEVICE block starting at base: it becomes
 * PA_MEM_DEVICE_FREED with the fence fence_now() returns, called under the
 * registry's lock (so every access check that saw the block live belongs to a
 * task submitted before that call: its ticket is below the fence). *out and
 * *fence (each may be NULL) get the block and its fence. False if there is no
 * such block (never allocated, freed already, or not its start). */
bool pa_memreg_retire(uintptr_t base, uint64_t (*fence_now)(void), pa_mem_range *out, uint64_t *fence);
/* Removes up to `cap` retired blocks whose fence is <= done (every task with a
 * ticket below `done` has finished) and copies them to out[]; returns how
 * many. *lowest (may be NULL) gets the lowest fence of the retired blocks
 * left (UINT64_MAX: none). Needs no memory. */
size_t pa_memreg_reclaim(uint64_t done, pa_mem_range *out, size_t cap, uint64_t *lowest);
/* The live device-accessible range (or retired block) nearest to p
 * (containing it, or the closest below or above). False if there is none. */
bool pa_memreg_nearest(uintptr_t p, pa_mem_range *out);
/* Live ranges of one kind, and their total size in bytes. */
size_t pa_memreg_count(pa_mem_kind kind, size_t *bytes);

#endif
