/* "Device" and pinned-host memory, and host ranges registered for device use.
 * Every block and range is in the memory registry (pa_memreg.h), so aclrtFree /
 * aclrtFreeHost reject unknown pointers and double frees with a message, and
 * launches can check tensor addresses. Copies and fills are plain memmove /
 * memset; the async variants run them on a stream.
 *
 * Blocks are at least 512-byte aligned (what the NPU's allocator gives;
 * llama.cpp's CANN backend relies on more than CANN's documented 64).
 *
 * aclrtFree never waits for queued work, and work queued before it keeps
 * running on the block, as on the NPU: the block is retired in the registry
 * with a fence (pa_stream_next_ticket()), so tasks queued before the free still
 * pass their access check on it while later ones fail as on a freed block, and
 * the host memory (and its device capacity) is released once every task below
 * the fence has finished: by whichever thread notices first, the freeing one
 * or a stream worker after a task (pa_stream_on_task_done). Needs no memory,
 * so a free cannot fail for lack of it. Locks: g_retire_mu -> the streams'
 * (pa_stream_unfinished_low) and the registry's. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/pa_capacity.h"
#include "runtime/pa_memory.h"
#include "runtime/pa_memreg.h"
#include "runtime/pa_device.h"
#include "runtime/pa_stream.h"

/* ---------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------- */

static pthread_once_t g_poison_once = PTHREAD_ONCE_INIT;
static bool g_poison;

static void poison_init(void) {
    const char *s = getenv("PYACLNN_POISON_ALLOC");
    g_poison = s != NULL && strcmp(s, "1") == 0;
}

#define PA_HUGE_PAGE ((size_t)2 << 20)
#define PA_DEVICE_ALIGN ((size_t)512) /* every device block's (and pinned block's) minimum alignment */

/* Host memory aligned to PA_DEVICE_ALIGN (its size rounded up to it); NULL
 * when size is 0 or out of memory. Freed with free(). */
static void *alloc_512(size_t size) {
    if (size == 0 || size > SIZE_MAX - (PA_DEVICE_ALIGN - 1)) return NULL;
    return aligned_alloc(PA_DEVICE_ALIGN, (size + PA_DEVICE_ALIGN - 1) & ~(PA_DEVICE_ALIGN - 1));
}

/* Policies that ask for huge pages first (the low byte of aclrtMemMallocPolicy;
 * the higher bits are bandwidth / access hints). */
static bool policy_wants_huge(aclrtMemMallocPolicy policy) {
    switch ((unsigned)policy & 0xffu) {
    case ACL_MEM_MALLOC_NORMAL_ONLY:
    case ACL_MEM_MALLOC_NORMAL_ONLY_P2P: return false;
    default: return true;
    }
}

/* Host memory for a device allocation of `bytes`. Huge-page policies get 2 MiB
 * alignment and transparent huge pages for allocations of 2 MiB and more (large
 * tensors then cost far fewer TLB misses); otherwise 512-byte aligned. Freed
 * with free(). */
static void *device_pages(size_t bytes, bool huge) {
    if (!huge || bytes < PA_HUGE_PAGE || bytes > SIZE_MAX - PA_HUGE_PAGE) return alloc_512(bytes);
    size_t rounded = (bytes + PA_HUGE_PAGE - 1) & ~(PA_HUGE_PAGE - 1);
    void *p = aligned_alloc(PA_HUGE_PAGE, rounded);
    if (p == NULL) return alloc_512(bytes); /* "huge first": fall back to small pages */
#if defined(MADV_HUGEPAGE)
    (void)madvise(p, rounded, MADV_HUGEPAGE); /* a hint; failure is harmless */
#endif
    return p;
}

/* ---------------------------------------------------------------------------
 * Deferred release of freed blocks (see the top of the file)
 * ------------------------------------------------------------------------- */

static pthread_mutex_t g_retire_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic size_t g_retired;            /* retired blocks not yet released */
static uint64_t g_retired_low = UINT64_MAX; /* their lowest fence; guarded by g_retire_mu */

/* Releases every retired block no unfinished task may use any more. Cheap
 * (one atomic load) when none is retired. */
static void reclaim_retired(void) {
    if (atomic_load(&g_retired) == 0) return;
    pthread_mutex_lock(&g_retire_mu);
    /* Under g_retire_mu: every block retired so far got its fence before this. */
    const uint64_t done = pa_stream_unfinished_low();
    while (atomic_load(&g_retired) > 0 && g_retired_low <= done) {
        pa_mem_range out[16];
        const size_t n = pa_memreg_reclaim(done, out, sizeof out / sizeof out[0], &g_retired_low);
        for (size_t i = 0; i < n; i++) {
            free((void *)out[i].base);
            pa_capacity_uncharge(out[i].device, out[i].size);
        }
        atomic_fetch_sub(&g_retired, n);
        if (n == 0) break;
    }
    pthread_mutex_unlock(&g_retire_mu);
}

__attribute__((constructor)) static void memory_register_task_done(void) {
    pa_stream_on_task_done(reclaim_retired);
}

/* align32_only: aclrtMallocAlign32 rounds to 32 without the extra 32 bytes. */
static aclError dev_alloc(const char *api, void **devPtr, size_t size, bool align32_only, bool huge) {
    if (devPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr must not be NULL", api);
    if (size == 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be > 0, got 0", api);
    int device = -1;
    aclError rc = pa_device_require(api, &device);
    if (rc != ACL_SUCCESS) return rc;
    size_t extra = align32_only ? 0 : 32;
    if (size > SIZE_MAX - 31 - extra - 64) {
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: size %zu is too large", api, size);
    }
    size_t bytes = ((size + 31) & ~(size_t)31) + extra;
    bool charged = pa_capacity_charge(device, bytes);
    if (!charged && atomic_load(&g_retired) > 0) { /* freed blocks whose work just finished */
        reclaim_retired();
        charged = pa_capacity_charge(device, bytes);
    }
    if (!charged) return pa_capacity_fail(api, device, bytes);
    void *p = device_pages(bytes, huge);
    if (p == NULL) {
        pa_capacity_uncharge(device, bytes);
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory allocating %zu bytes", api, bytes);
    }
    pthread_once(&g_poison_once, poison_init);
    if (g_poison) memset(p, 0xFF, bytes);
    if (!pa_memreg_add((uintptr_t)p, bytes, PA_MEM_DEVICE, device, NULL)) {
        free(p);
        pa_capacity_uncharge(device, bytes);
        return pa_rt_fail_oom(api, "the allocation table");
    }
    *devPtr = p;
    return ACL_SUCCESS;
}

PA_API aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return dev_alloc("aclrtMalloc", devPtr, size, false, policy_wants_huge(policy));
}

PA_API aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return dev_alloc("aclrtMallocAlign32", devPtr, size, true, policy_wants_huge(policy));
}

PA_API aclError aclrtMallocCached(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return dev_alloc("aclrtMallocCached", devPtr, size, false, policy_wants_huge(policy));
}

/* Freeing does not require a set device: a live allocation can always be
 * returned (device memory survives aclrtResetDevice in the emulation). It is
 * retired, then released at once unless a task queued before may still use
 * it (see the top of the file). */
PA_API aclError aclrtFree(void *devPtr) {
    if (devPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr must not be NULL");
    uint64_t fence = 0;
    pthread_mutex_lock(&g_retire_mu);
    const bool live = pa_memreg_retire((uintptr_t)devPtr, pa_stream_next_ticket, NULL, &fence);
    if (live) {
        atomic_fetch_add(&g_retired, 1);
        if (fence < g_retired_low) g_retired_low = fence;
    }
    pthread_mutex_unlock(&g_retire_mu);
    if (!live) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtFree: pointer %p is not a live device allocation (double free?)", devPtr);
    }
    reclaim_retired();
    return ACL_SUCCESS;
}

PA_API aclError aclrtMallocHost(void **hostPtr, size_t size) {
    if (hostPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr must not be NULL");
    if (size == 0) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size must be > 0, got 0");
    aclError rc = pa_device_require("aclrtMallocHost", NULL);
    if (rc != ACL_SUCCESS) return rc;
    void *p = alloc_512(size);
    if (p == NULL) {
        return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocHost: out of memory allocating %zu bytes",
                          size);
    }
    if (!pa_memreg_add((uintptr_t)p, size, PA_MEM_HOST, -1, NULL)) {
        free(p);
        return pa_rt_fail_oom("aclrtMallocHost", "the allocation table");
    }
    *hostPtr = p;
    return ACL_SUCCESS;
}

PA_API aclError aclrtFreeHost(void *hostPtr) {
    if (hostPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: hostPtr must not be NULL");
    pa_mem_range blk, reg;
    if (pa_memreg_range_of(PA_MEM_HOST, (uintptr_t)hostPtr, &blk) && blk.base == (uintptr_t)hostPtr &&
        pa_memreg_overlap(blk.base, blk.size, &reg)) {
        /* kernels could still reach the block through the registration */
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtFreeHost: %p is still registered for device access ([%p, +%zu)); call "
                          "aclrtHostUnregister first",
                          hostPtr, (void *)reg.base, reg.size);
    }
    if (!pa_memreg_remove((uintptr_t)hostPtr, PA_MEM_HOST, NULL)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclrtFreeHost: pointer %p is not a live aclrtMallocHost allocation (double free?)",
                          hostPtr);
    }
    free(hostPtr);
    return ACL_SUCCESS;
}

/* Host memory made usable by kernels. On the CPU the device address is the
 * host address itself (as CANN gives for memory allocated with the VA flag),
 * and any alignment is accepted (CANN asks for 4 KiB-aligned ptr). */
PA_API aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr) {
    const char *api = "aclrtHostRegister";
    if (ptr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: ptr must not be NULL", api);
    if (devPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr must not be NULL", api);
    if (size == 0 || size > SIZE_MAX) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be in (0, SIZE_MAX], got %llu", api,
                          (unsigned long long)size);
    }
    if (type != ACL_HOST_REGISTER_MAPPED) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: type must be ACL_HOST_REGISTER_MAPPED (0), got %d", api,
                          (int)type);
    }
    aclError rc = pa_device_require(api, NULL);
    if (rc != ACL_SUCCESS) return rc;
    pa_mem_range clash;
    if (!pa_memreg_add((uintptr_t)ptr, (size_t)size, PA_MEM_HOST_REGISTERED, -1, &clash)) {
        if (clash.size == 0) {
            if ((uintptr_t)ptr > UINTPTR_MAX - ((size_t)size - 1)) {
                return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: [%p, +%llu) wraps around the address space", api,
                                  ptr, (unsigned long long)size);
            }
            return pa_rt_fail_oom(api, "the range table");
        }
        /* overlapping another registration is CANN's "already registered" */
        return pa_rt_fail(clash.kind == PA_MEM_HOST_REGISTERED ? ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                               : ACL_ERROR_INVALID_PARAM,
                          "%s: [%p, +%llu) overlaps the %s [%p, +%zu)", api, ptr, (unsigned long long)size,
                          pa_mem_kind_name(clash.kind), (void *)clash.base, clash.size);
    }
    *devPtr = ptr;
    return ACL_SUCCESS;
}

PA_API aclError aclrtHostUnregister(void *ptr) {
    if (ptr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtHostUnregister: ptr must not be NULL");
    if (!pa_memreg_remove((uintptr_t)ptr, PA_MEM_HOST_REGISTERED, NULL)) {
        return pa_rt_fail(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                          "aclrtHostUnregister: %p is not the start of a range registered with aclrtHostRegister",
                          ptr);
    }
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * The access check of launches (pa_memory.h)
 * ------------------------------------------------------------------------- */

static pthread_once_t g_check_once = PTHREAD_ONCE_INIT;
static bool g_check_ranges = true;

static void check_init(void) {
    const char *s = getenv("PYACLNN_CHECK_ADDRESSES");
    g_check_ranges = !(s != NULL && strcmp(s, "0") == 0);
}

int pa_mem_check_access(const char *api, const char *what, const void *p, uint64_t bytes, int device) {
    pthread_once(&g_check_once, check_init);
    if (!g_check_ranges) return 0;
    pa_mem_range r;
    /* a block freed after this task was queued is still live for it */
    const bool inside =
        bytes <= SIZE_MAX && pa_memreg_covers_for((uintptr_t)p, (size_t)bytes, pa_stream_task_ticket(), &r);
    if (inside && pa_device_can_reach(device, r.device)) return 0;
    char where[240] = "no device memory is allocated";
    if (inside) {
        snprintf(where, sizeof where,
                 "it lies in device %d's %s [%p, +%zu), which device %d may use only after "
                 "aclrtDeviceEnablePeerAccess(%d, 0)",
                 r.device, pa_mem_kind_name(r.kind), (void *)r.base, r.size, device, r.device);
    } else if (pa_memreg_find((uintptr_t)p, &r) && r.kind == PA_MEM_DEVICE_FREED &&
               bytes <= r.size - ((uintptr_t)p - r.base)) {
        snprintf(where, sizeof where,
                 "it lies in the %s [%p, +%zu) before this work was queued (only work queued before the free "
                 "may still use it)",
                 pa_mem_kind_name(r.kind), (void *)r.base, r.size);
    } else if (pa_memreg_find((uintptr_t)p, &r) && r.kind == PA_MEM_HOST) {
        snprintf(where, sizeof where,
                 "it lies in the %s [%p, +%zu), which kernels may use only after aclrtHostRegister",
                 pa_mem_kind_name(r.kind), (void *)r.base, r.size);
    } else if (pa_memreg_nearest((uintptr_t)p, &r)) {
        const bool starts = (uintptr_t)p >= r.base && (uintptr_t)p - r.base < r.size;
        snprintf(where, sizeof where, "%s the %s [%p, +%zu)", starts ? "it starts inside but runs past the end of"
                                                                     : "the nearest is",
                 pa_mem_kind_name(r.kind), (void *)r.base, r.size);
    }
    return pa_fail(ACL_ERROR_RT_AICORE_EXCEPTION,
                   "%s: %s [%p, +%llu bytes) is not inside one device allocation or registered host range %s"
                   "(the DDR address is out of range); %s",
                   api, what, p, (unsigned long long)bytes, inside ? "of this device " : "", where);
}

/* ---------------------------------------------------------------------------
 * Copies and fills
 * ------------------------------------------------------------------------- */

static aclError check_kind(const char *api, aclrtMemcpyKind kind) {
    if ((int)kind < (int)ACL_MEMCPY_HOST_TO_HOST || (int)kind > (int)ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: kind must be an aclrtMemcpyKind (0..7), got %d", api,
                          (int)kind);
    }
    return ACL_SUCCESS;
}

/* A copy between two devices' memory, run by device `dev`, needs peer access
 * from dev to each of them (aclrtDeviceEnablePeerAccess), as on hardware;
 * copies between one device and the host need none. */
static aclError check_reach_copy(const char *api, void *dst, const void *src, size_t count, int dev) {
    pa_mem_range d, s;
    if (count == 0 || !pa_memreg_find((uintptr_t)dst, &d) || !pa_memreg_find((uintptr_t)src, &s) || d.device < 0 ||
        s.device < 0 || d.device == s.device) {
        return ACL_SUCCESS;
    }
    const pa_mem_range *r = !pa_device_can_reach(dev, s.device) ? &s : !pa_device_can_reach(dev, d.device) ? &d : NULL;
    if (r == NULL) return ACL_SUCCESS;
    return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                      "%s: copies from device %d's memory to device %d's: %s %p lies in device %d's memory (the %s [%p, "
                      "+%zu)) and device %d, which runs the copy, has no peer access to it: call "
                      "aclrtDeviceEnablePeerAccess(%d, 0) on device %d first",
                      api, s.device, d.device, r == &s ? "src" : "dst", r == &s ? src : (const void *)dst, r->device,
                      pa_mem_kind_name(r->kind), (void *)r->base, r->size, dev, r->device, dev);
}

static aclError check_memcpy(const char *api, void *dst, size_t destMax, const void *src, size_t count,
                             aclrtMemcpyKind kind) {
    if (count > 0 && dst == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dst must not be NULL", api);
    if (count > 0 && src == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: src must not be NULL", api);
    if (count > destMax) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: count (%zu) exceeds destMax (%zu)", api, count, destMax);
    }
    aclError rc = check_kind(api, kind);
    if (rc != ACL_SUCCESS) return rc;
    return pa_device_require(api, NULL);
}

static aclError check_memset(const char *api, void *devPtr, size_t maxCount, size_t count) {
    if (count > 0 && devPtr == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr must not be NULL", api);
    if (count > maxCount) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: count (%zu) exceeds maxCount (%zu)", api, count, maxCount);
    }
    return pa_device_require(api, NULL);
}

PA_API aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    aclError rc = check_memcpy("aclrtMemcpy", dst, destMax, src, count, kind);
    if (rc == ACL_SUCCESS) rc = check_reach_copy("aclrtMemcpy", dst, src, count, pa_device_current());
    if (rc != ACL_SUCCESS || count == 0) return rc;
    /* Synchronous and, as on hardware, not ordered after queued stream work. */
    memmove(dst, src, count);
    return ACL_SUCCESS;
}

PA_API aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              aclrtMemcpyKind kind) {
    const char *api = "aclrtMemcpy2d";
    if (width > 0 && height > 0 && (dst == NULL || src == NULL)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: dst and src must not be NULL", api);
    }
    if (width > dpitch) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: width (%zu) exceeds dpitch (%zu)", api, width, dpitch);
    }
    if (width > spitch) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: width (%zu) exceeds spitch (%zu)", api, width, spitch);
    }
    aclError rc = check_kind(api, kind);
    if (rc == ACL_SUCCESS) rc = pa_device_require(api, NULL);
    if (rc != ACL_SUCCESS || width == 0 || height == 0) return rc;
    rc = check_reach_copy(api, dst, src, width, pa_device_current());
    if (rc != ACL_SUCCESS) return rc;
    for (size_t r = 0; r < height; r++) {
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    }
    return ACL_SUCCESS;
}

PA_API aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    aclError rc = check_memset("aclrtMemset", devPtr, maxCount, count);
    if (rc != ACL_SUCCESS || count == 0) return rc;
    memset(devPtr, (int)(value & 0xff), count);
    return ACL_SUCCESS;
}

typedef struct {
    void *dst;
    const void *src; /* NULL for a fill */
    size_t count;
    int value;
} mem_task;

static int mem_task_run(void *arg) {
    mem_task *t = arg;
    if (t->src != NULL) memmove(t->dst, t->src, t->count);
    else memset(t->dst, t->value, t->count);
    return 0;
}

/* Queues a copy (or a fill, src NULL) on `stream`; it runs on the stream's device. */
static aclError submit_mem_task(const char *api, aclrtStream stream, void *dst, const void *src, size_t count,
                                int value) {
    pa_stream *s = NULL;
    aclError rc = pa_stream_acquire(stream, api, &s);
    if (rc != ACL_SUCCESS) return rc;
    if (count == 0) { /* nothing to do, but the stream handle was still checked */
        pa_stream_release(s);
        return ACL_SUCCESS;
    }
    rc = src != NULL ? check_reach_copy(api, dst, src, count, pa_stream_device(s)) : ACL_SUCCESS;
    if (rc != ACL_SUCCESS) {
        pa_stream_release(s);
        return rc;
    }
    mem_task *t = malloc(sizeof *t);
    if (t == NULL) {
        pa_stream_release(s);
        return pa_rt_fail_oom(api, "the copy task");
    }
    t->dst = dst;
    t->src = src;
    t->count = count;
    t->value = value;
    rc = pa_stream_enqueue(s, mem_task_run, free, t, api);
    pa_stream_release(s);
    return rc;
}

PA_API aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream stream) {
    aclError rc = check_memcpy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
    if (rc != ACL_SUCCESS) return rc;
    return submit_mem_task("aclrtMemcpyAsync", stream, dst, src, count, 0);
}

PA_API aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
    aclError rc = check_memset("aclrtMemsetAsync", devPtr, maxCount, count);
    if (rc != ACL_SUCCESS) return rc;
    return submit_mem_task("aclrtMemsetAsync", stream, devPtr, NULL, count, (int)(value & 0xff));
}

/* ---------------------------------------------------------------------------
 * Capacity of the current device
 * ------------------------------------------------------------------------- */

PA_API aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    if (free == NULL || total == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: free and total must not be NULL");
    }
    if ((int)attr < (int)ACL_DDR_MEM || (int)attr > (int)ACL_MEM_P2P_HUGE1G) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr must be an aclrtMemAttr (0..17), got %d",
                          (int)attr);
    }
    int device = -1;
    aclError rc = pa_device_require("aclrtGetMemInfo", &device);
    if (rc != ACL_SUCCESS) return rc;
    /* One pool per device: every attr reports that device's memory. */
    *total = pa_capacity_total(device);
    size_t used = pa_capacity_used(device);
    *free = used < *total ? *total - used : 0;
    return ACL_SUCCESS;
}
