/* The emulated device's identity (SoC name, CANN version) and its memory
 * capacity (see pa_capacity.h for the rule). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "acl/acl.h"
#include "runtime/pa_capacity.h"
#include "runtime/pa_device.h"

/* ---------------------------------------------------------------------------
 * SoC
 * ------------------------------------------------------------------------- */

#define GIB ((size_t)1 << 30)

/* Atlas A2 training series: both operators run on these. */
typedef struct {
    const char *name;
    size_t hbm;
} pa_soc;

static const pa_soc g_socs[] = {
    {"Ascend910B1", 64 * GIB},
    {"Ascend910B2", 64 * GIB},
    {"Ascend910B3", 64 * GIB},
    {"Ascend910B4", 32 * GIB},
};
#define PA_DEFAULT_SOC 2 /* Ascend910B3 */

static pthread_once_t g_soc_once = PTHREAD_ONCE_INIT;
static const pa_soc *g_soc;

static void soc_init(void) {
    g_soc = &g_socs[PA_DEFAULT_SOC];
    const char *env = getenv("PYACLNN_SOC_NAME");
    if (env == NULL || env[0] == '\0') return;
    for (size_t i = 0; i < sizeof g_socs / sizeof g_socs[0]; i++) {
        if (strcasecmp(env, g_socs[i].name) == 0) {
            g_soc = &g_socs[i];
            return;
        }
    }
    fprintf(stderr,
            "pyaclnn: warning: ignoring PYACLNN_SOC_NAME=\"%s\" (expected Ascend910B1, Ascend910B2, Ascend910B3 or "
            "Ascend910B4); using %s\n",
            env, g_soc->name);
}

const char *pa_soc_name(void) {
    pthread_once(&g_soc_once, soc_init);
    return g_soc->name;
}

size_t pa_soc_hbm_bytes(void) {
    pthread_once(&g_soc_once, soc_init);
    return g_soc->hbm;
}

PA_API const char *aclrtGetSocName(void) { return pa_soc_name(); }

/* ---------------------------------------------------------------------------
 * CANN version: the oldest release that has every API pyaclnn offers
 * (the ACL API version in acl.h belongs to the same release).
 * ------------------------------------------------------------------------- */

#define PA_CANN_MAJOR "8"
#define PA_CANN_MINOR "3"
#define PA_CANN_RELEASE "RC1"
#define PA_CANN_PATCH "0"
#define PA_CANN_VERSION PA_CANN_MAJOR "." PA_CANN_MINOR "." PA_CANN_RELEASE

PA_API aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version) {
    if (version == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclsysGetCANNVersion: version must not be NULL");
    if ((int)name < (int)ACL_PKG_NAME_CANN || (int)name > (int)ACL_PKG_NAME_DRIVER) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclsysGetCANNVersion: name must be an aclCANNPackageName (0..7), got %d", (int)name);
    }
    memset(version, 0, sizeof *version);
    /* Every package of the emulation has the one version. */
    snprintf(version->version, sizeof version->version, "%s", PA_CANN_VERSION);
    snprintf(version->majorVersion, sizeof version->majorVersion, "%s", PA_CANN_MAJOR);
    snprintf(version->minorVersion, sizeof version->minorVersion, "%s", PA_CANN_MINOR);
    snprintf(version->releaseVersion, sizeof version->releaseVersion, "%s", PA_CANN_RELEASE);
    snprintf(version->patchVersion, sizeof version->patchVersion, "%s", PA_CANN_PATCH);
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Capacity
 * ------------------------------------------------------------------------- */

bool pa_parse_bytes(const char *s, size_t *out) {
    if (s == NULL || *s < '0' || *s > '9') return false;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s++ - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    case 't': case 'T': shift = 40; s++; break;
    default: break;
    }
    if (shift != 0 && (*s == 'i' || *s == 'I')) s++;
    if (*s == 'b' || *s == 'B') s++;
    if (*s != '\0') return false;
    if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
    v <<= shift;
    if (v > SIZE_MAX) return false;
    *out = (size_t)v;
    return true;
}

/* Physical RAM, or the cgroup memory limit when that is lower (0 if unknown).
 * *transient: a limit file could not be read for a passing reason (out of
 * memory or file descriptors), so the answer may change on the next call. */
static size_t host_ram_limit(bool *transient) {
    unsigned long long ram = 0;
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages > 0 && ps > 0) ram = (unsigned long long)pages * (unsigned long long)ps;
    static const char *const limits[] = {"/sys/fs/cgroup/memory.max",
                                         "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        bool t = false;
        FILE *f = pa_open_sys_file(limits[i], &t);
        if (t) *transient = true;
        if (f == NULL) continue;
        unsigned long long lim = 0;
        int got = fscanf(f, "%llu", &lim);
        if (got == EOF && ferror(f)) *transient = true;
        if (got == 1 && lim > 0 && (ram == 0 || lim < ram)) ram = lim; /* "max": no limit */
        fclose(f);
    }
    return ram > SIZE_MAX ? SIZE_MAX : (size_t)ram;
}

/* The capacity is computed once, except that a transient failure to read the
 * cgroup limit is not kept: that call uses what it could read, and the next
 * one reads again. */
static pthread_mutex_t g_cap_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool g_cap_known;
static atomic_size_t g_capacity; /* per device */
static atomic_size_t g_used[PA_MAX_DEVICES];

/* Caller holds g_cap_mu. */
static void capacity_init(void) {
    static bool warned;
    const char *env = getenv("PYACLNN_DEVICE_MEMORY");
    if (env != NULL && env[0] != '\0') {
        size_t v;
        if (pa_parse_bytes(env, &v) && v > 0) {
            atomic_store(&g_capacity, v);
            atomic_store(&g_cap_known, true);
            return;
        }
        if (!warned) {
            fprintf(stderr,
                    "pyaclnn: warning: ignoring PYACLNN_DEVICE_MEMORY=\"%s\" (expected a byte count > 0, e.g. 8G "
                    "or 512M)\n",
                    env);
        }
        warned = true;
    }
    /* Half of the host's RAM, shared evenly by the devices, so that all of
     * them together cannot take the host down. */
    size_t cap = pa_soc_hbm_bytes();
    bool transient = false;
    size_t ram = host_ram_limit(&transient);
    size_t share = ram / 2 / (size_t)pa_device_count();
    if (ram != 0 && share < cap) cap = share;
    cap &= ~(PA_DEVICE_GRANULARITY - 1);
    atomic_store(&g_capacity, cap != 0 ? cap : PA_DEVICE_GRANULARITY);
    if (!transient) atomic_store(&g_cap_known, true);
}

static bool device_ok(int device) { return device >= 0 && device < PA_MAX_DEVICES; }

size_t pa_capacity_total(int device) {
    PA_UNUSED(device); /* every device has the same capacity */
    if (!atomic_load(&g_cap_known)) {
        pthread_mutex_lock(&g_cap_mu);
        if (!atomic_load(&g_cap_known)) capacity_init();
        pthread_mutex_unlock(&g_cap_mu);
    }
    return atomic_load(&g_capacity);
}

size_t pa_capacity_used(int device) { return device_ok(device) ? atomic_load(&g_used[device]) : 0; }

bool pa_capacity_charge(int device, size_t bytes) {
    if (!device_ok(device)) return false;
    size_t total = pa_capacity_total(device);
    size_t used = atomic_load(&g_used[device]);
    do {
        if (bytes > total || used > total - bytes) return false;
    } while (!atomic_compare_exchange_weak(&g_used[device], &used, used + bytes));
    return true;
}

void pa_capacity_uncharge(int device, size_t bytes) {
    if (device_ok(device)) atomic_fetch_sub(&g_used[device], bytes);
}

int pa_capacity_fail(const char *api, int device, size_t bytes) {
    size_t total = pa_capacity_total(device), used = pa_capacity_used(device);
    return pa_rt_fail(ACL_ERROR_RT_MEMORY_ALLOCATION,
                      "%s: device memory exhausted: %zu bytes requested, %zu of %zu free on device %d (set "
                      "PYACLNN_DEVICE_MEMORY to change the capacity)",
                      api, bytes, used < total ? total - used : 0, total, device);
}
