/* pyaclnn's own API (include/pyaclnn/pyaclnn_ext.h): runtime description,
 * ISA cap and kernel thread count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/pa_common.h"
#include "cpu/pa_cpu.h"
#include "meta/pa_handles.h"
#include "pyaclnn/pyaclnn_ext.h"
#include "runtime/pa_memreg.h"
#include "runtime/pa_threadpool.h"

#define PA_VERSION_STRING "0.1.0"

#define PA_INFO_CAP 256

/* The calling thread's buffer for pyaclnnGetRuntimeInfo, freed at thread exit. */
static PA_THREAD_LOCAL char *tl_info;
static pthread_once_t g_info_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_info_key;
static bool g_info_key_ok;

static void info_free(void *p) {
    free(p);
    tl_info = NULL;
}
static void info_key_init(void) { g_info_key_ok = pthread_key_create(&g_info_key, info_free) == 0; }

PA_API const char *pyaclnnGetRuntimeInfo(void) {
    /* Rebuilt on every call; valid until the next call on the same thread.
     * NULL when host memory ran out. */
    if (tl_info == NULL) {
        pthread_once(&g_info_once, info_key_init);
        char *b = g_info_key_ok ? malloc(PA_INFO_CAP) : NULL;
        if (b != NULL && pthread_setspecific(g_info_key, b) != 0) {
            free(b);
            b = NULL;
        }
        if (b == NULL) {
            pa_fail_oom(ACL_ERROR_BAD_ALLOC, "pyaclnnGetRuntimeInfo", "the text");
            return NULL;
        }
        tl_info = b;
    }
    char *buf = tl_info;
    snprintf(buf, PA_INFO_CAP,
             "{\"isa\":\"%s\",\"detected_isa\":\"%s\",\"avx512bf16\":%s,\"num_threads\":%d,\"version\":\"%s\"}",
             pa_isa_name(pa_cpu_isa()), pa_isa_name(pa_cpu_detected_isa()),
             pa_cpu_has_avx512bf16() ? "true" : "false", pa_num_threads(), PA_VERSION_STRING);
    return buf;
}

/* NULL undoes earlier calls: back to the PYACLNN_MAX_ISA cap if that is set,
 * else the best tier this CPU supports. */
PA_API aclError pyaclnnSetMaxIsa(const char *tier) {
    if (tier != NULL && !pa_isa_parse(tier, NULL)) {
        return pa_fail(ACL_ERROR_INVALID_PARAM,
                       "pyaclnnSetMaxIsa: tier must be \"scalar\", \"avx2\", \"avx512\" or NULL, got \"%s\"", tier);
    }
    pa_cpu_set_cap(tier); /* a tier above the CPU's is clamped (with a warning) */
    return ACL_SUCCESS;
}

PA_API aclError pyaclnnSetNumThreads(int32_t n) {
    if (n < 0) {
        return pa_fail(ACL_ERROR_INVALID_PARAM, "pyaclnnSetNumThreads: n must be >= 0 (0 = default), got %d", (int)n);
    }
    pa_set_num_threads(n);
    return ACL_SUCCESS;
}

PA_API int32_t pyaclnnGetNumThreads(void) { return pa_num_threads(); }

PA_API const char *pyaclnnGetIsa(void) { return pa_isa_name(pa_cpu_isa()); }

PA_API uint64_t pyaclnnCountMemRanges(int32_t kind, uint64_t *bytes) {
    size_t total = 0, n = 0;
    if (kind >= 0 && kind < (int32_t)PA_MEM_KIND_COUNT) n = pa_memreg_count((pa_mem_kind)kind, &total);
    if (bytes != NULL) *bytes = total;
    return n;
}

PA_API uint64_t pyaclnnCountHandles(int32_t kind) {
    if (kind < 0 || kind > (int32_t)PA_HANDLE_KIND_LAST) return 0;
    return pa_handles_count((pa_handle_kind)kind);
}
