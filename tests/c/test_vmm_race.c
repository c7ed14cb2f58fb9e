/* aclrtMapMem / aclrtUnmapMem re-merge the registry ranges of adjacent mappings
 * while other threads launch kernels: the launch-time address check of memory
 * inside a chunk that stays mapped must never fail meanwhile (it would be a
 * spurious 507015). White-box, unity build as test_runtime_internal.c (needs
 * -I native): the runtime sources are compiled into this program, with
 * PA_MEMREG_AFTER_CHANGE defined so memreg.c calls after_change() after each
 * change of the registry, with its lock released.
 *   1. every change: after each one, the check of a tensor in the stable chunk
 *      runs (deterministic: any intermediate state a reader could see is seen);
 *   2. concurrently: a second thread runs the check in a loop while this one
 *      maps and unmaps the neighbours (after_change yields the CPU, so a
 *      reader runs wherever a state between two changes is visible);
 *   3. pa_memreg_replace, the one registry step they use: all or nothing.
 * Exits 1 on the first failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

static void after_change(void);
#define PA_MEMREG_AFTER_CHANGE() after_change()

#include "common/pa_common.c"
#include "runtime/base.c"
#include "cpu/cpu.c"
#include "runtime/capacity.c"
#include "runtime/device.c"
#include "runtime/event.c"
#include "runtime/init.c"
#include "runtime/memory.c"
#include "runtime/memreg.c"
#include "runtime/stream.c"
#include "runtime/threadpool.c"
#include "runtime/vmm.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* meta/ is not part of this build. */
size_t pa_dtype_size(aclDataType dt) { return dt == ACL_FLOAT ? 4 : 0; }

#define PA_CHECK_ERRMSG() pa_get_errmsg()
#include "pa_check.h"

#define GRAN PA_DEVICE_GRANULARITY
#define CHUNKS 5

static char *g_chunk[CHUNKS]; /* the granules of one reservation */
static const int STABLE = 2;  /* mapped from start to end */

/* What the launch of an op would check: a 4 KiB tensor in the stable chunk. */
static int check_stable(void) {
    return pa_mem_check_access("test_vmm_race", "x storage", g_chunk[STABLE] + 4096, 4096, 0);
}

enum { HOOK_OFF, HOOK_CHECK, HOOK_YIELD };
static atomic_int g_hook = HOOK_OFF;
static atomic_long g_changes, g_bad_checks;

static void after_change(void) {
    switch (atomic_load(&g_hook)) {
    case HOOK_CHECK:
        atomic_fetch_add(&g_changes, 1);
        if (check_stable() != 0) atomic_fetch_add(&g_bad_checks, 1);
        break;
    case HOOK_YIELD: sched_yield(); break;
    default: break;
    }
}

static aclrtDrvMemHandle g_handle[CHUNKS];

static void map(int i) { CHECK_EQ(aclrtMapMem(g_chunk[i], GRAN, 0, g_handle[i], 0), ACL_SUCCESS); }
static void unmap(int i) { CHECK_EQ(aclrtUnmapMem(g_chunk[i]), ACL_SUCCESS); }

/* Every way a neighbour of the stable chunk joins or leaves its run: below,
 * above, bridging to a further run, and splitting it again; the stable chunk
 * is never the one mapped or unmapped. */
static void neighbour_cycle(void) {
    map(STABLE + 1);     /* [S] -> [S S+1] */
    map(STABLE - 1);     /* -> [S-1 .. S+1] */
    unmap(STABLE + 1);   /* -> [S-1 S] */
    unmap(STABLE - 1);   /* -> [S] */
    map(STABLE + 2);     /* [S] [S+2] */
    map(STABLE + 1);     /* bridges: -> [S .. S+2] */
    map(STABLE - 2);     /* [S-2] [S .. S+2] */
    map(STABLE - 1);     /* -> [S-2 .. S+2] */
    unmap(STABLE - 1);   /* splits: [S-2] [S .. S+2] */
    unmap(STABLE + 1);   /* splits: [S] [S+2] */
    unmap(STABLE - 2);
    unmap(STABLE + 2);   /* [S] */
}

static void setup(void) {
    CHECK_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    void *va = NULL;
    CHECK_EQ(aclrtReserveMemAddress(&va, CHUNKS * GRAN, 0, NULL, 0), ACL_SUCCESS);
    for (int i = 0; i < CHUNKS; i++) {
        g_chunk[i] = (char *)va + (size_t)i * GRAN;
        CHECK_EQ(aclrtMallocPhysical(&g_handle[i], GRAN, &prop, 0), ACL_SUCCESS);
    }
    map(STABLE);
    CHECK_EQ(check_stable(), 0);
}

static void teardown(void) {
    unmap(STABLE);
    CHECK_EQ(pa_memreg_count(PA_MEM_VIRTUAL_MAPPED, NULL), 0);
    for (int i = 0; i < CHUNKS; i++) CHECK_EQ(aclrtFreePhysical(g_handle[i]), ACL_SUCCESS);
    CHECK_EQ(aclrtReleaseMemAddress(g_chunk[0]), ACL_SUCCESS);
}

/* ---- 1. the check between every two registry changes ---- */
static long test_every_change(void) {
    atomic_store(&g_changes, 0);
    atomic_store(&g_bad_checks, 0);
    atomic_store(&g_hook, HOOK_CHECK);
    neighbour_cycle();
    atomic_store(&g_hook, HOOK_OFF);
    const long changes = atomic_load(&g_changes), bad = atomic_load(&g_bad_checks);
    printf("  every change: %ld registry changes, %ld failed checks\n", changes, bad);
    CHECK(changes >= 12); /* at least one per map / unmap */
    return bad;
}

/* ---- 2. a reader thread checking while this one maps and unmaps ---- */
static atomic_bool g_started, g_done;
static atomic_long g_checks_run;

static void *reader(void *arg) {
    (void)arg;
    CHECK_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    atomic_store(&g_started, true);
    while (!atomic_load(&g_done)) {
        if (check_stable() != 0) atomic_fetch_add(&g_bad_checks, 1);
        atomic_fetch_add(&g_checks_run, 1);
        sched_yield(); /* leaves the registry's lock free most of the time: the mapper never starves */
    }
    return NULL;
}

static long test_concurrent_reader(int cycles) {
    atomic_store(&g_bad_checks, 0);
    atomic_store(&g_checks_run, 0);
    atomic_store(&g_started, false);
    atomic_store(&g_done, false);
    atomic_store(&g_hook, HOOK_YIELD);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, reader, NULL), 0);
    while (!atomic_load(&g_started)) sched_yield();
    for (int c = 0; c < cycles; c++) neighbour_cycle();
    atomic_store(&g_done, true);
    CHECK_EQ(pthread_join(th, NULL), 0);
    atomic_store(&g_hook, HOOK_OFF);
    const long bad = atomic_load(&g_bad_checks), run = atomic_load(&g_checks_run);
    printf("  concurrent: %d map/unmap calls, %ld checks, %ld failed\n", cycles * 12, run, bad);
    CHECK(run > 0);
    return bad;
}

/* ---- 3. pa_memreg_replace: every change in one step, or none ---- */
static bool listed(const pa_mem_range *want) { /* want is one live range, exactly */
    pa_mem_range got;
    return pa_memreg_covers(want->base, want->size, &got) && got.base == want->base && got.size == want->size &&
           got.kind == want->kind && got.device == want->device;
}

static void test_replace(void) {
    const uintptr_t B = (uintptr_t)1 << 44; /* the registry holds ranges, not memory: nothing lives here */
    const pa_mem_range a = {B, 0x1000, PA_MEM_VIRTUAL_MAPPED, 0}, b = {B + 0x1000, 0x1000, PA_MEM_VIRTUAL_MAPPED, 0};
    const pa_mem_range ab = {B, 0x2000, PA_MEM_VIRTUAL_MAPPED, 0}, pair[2] = {a, b}, swapped[2] = {b, a};
    const pa_mem_range other = {B + 0x2000, 0x1000, PA_MEM_DEVICE, 1};
    const size_t n0 = pa_memreg_count(PA_MEM_VIRTUAL_MAPPED, NULL);
    CHECK(pa_memreg_add(other.base, other.size, other.kind, other.device, NULL));
    CHECK(pa_memreg_replace(NULL, 0, &a, 1, NULL)); /* add */
    CHECK(pa_memreg_replace(&a, 1, pair, 2, NULL)); /* a stays, b joins */
    CHECK(listed(&a) && listed(&b));
    CHECK(pa_memreg_replace(pair, 2, &ab, 1, NULL)); /* merge */
    CHECK(listed(&ab) && listed(&other));
    CHECK_EQ(pa_memreg_count(PA_MEM_VIRTUAL_MAPPED, NULL), n0 + 1);
    /* refused, nothing changed: */
    pa_mem_range clash = {1, 1, PA_MEM_DEVICE, 0};
    CHECK(!pa_memreg_replace(&a, 1, pair, 2, &clash)); /* a `from` range not live as given */
    CHECK_EQ(clash.size, 0);
    const pa_mem_range ab_dev1 = {B, 0x2000, PA_MEM_VIRTUAL_MAPPED, 1}, wide = {B, 0x3000, PA_MEM_VIRTUAL_MAPPED, 0};
    CHECK(!pa_memreg_replace(&ab_dev1, 1, &a, 1, NULL)); /* another device's */
    CHECK(!pa_memreg_replace(&ab, 1, &wide, 1, &clash)); /* overlaps a range that stays */
    CHECK(clash.base == other.base && clash.size == other.size && clash.kind == other.kind && clash.device == 1);
    CHECK(!pa_memreg_replace(&ab, 1, swapped, 2, NULL)); /* not sorted */
    const pa_mem_range overlapping[2] = {ab, b}, empty = {B, 0, PA_MEM_VIRTUAL_MAPPED, 0};
    const pa_mem_range host = {B, 0x1000, PA_MEM_HOST, -1}, wraps = {UINTPTR_MAX, 2, PA_MEM_VIRTUAL_MAPPED, 0};
    CHECK(!pa_memreg_replace(&ab, 1, overlapping, 2, NULL));
    CHECK(!pa_memreg_replace(&ab, 1, &empty, 1, NULL));
    CHECK(!pa_memreg_replace(&ab, 1, &host, 1, NULL)); /* not device-accessible */
    CHECK(!pa_memreg_replace(&ab, 1, &wraps, 1, NULL));
    CHECK(listed(&ab) && listed(&other));
    CHECK_EQ(pa_memreg_count(PA_MEM_VIRTUAL_MAPPED, NULL), n0 + 1);
    CHECK(pa_memreg_replace(&ab, 1, NULL, 0, NULL)); /* remove */
    CHECK(!pa_memreg_covers(B, 1, NULL));
    CHECK(pa_memreg_remove(other.base, other.kind, NULL));
    CHECK_EQ(pa_memreg_count(PA_MEM_VIRTUAL_MAPPED, NULL), n0);
}

int main(void) {
    setenv("PYACLNN_NUM_THREADS", "1", 1);
    setup();
    const long bad_every = test_every_change();
    const char *s = getenv("PA_VMM_RACE_CYCLES");
    const long bad_concurrent = test_concurrent_reader(s != NULL ? atoi(s) : 300);
    CHECK_EQ(bad_every, 0);
    CHECK_EQ(bad_concurrent, 0);
    teardown();
    test_replace();
    printf("test_vmm_race: %d checks passed\n", (int)g_checks);
    return 0;
}
