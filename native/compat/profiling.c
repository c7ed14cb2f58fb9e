/* The profiling entry points torch_npu links against (CANN's libmsprofiler,
 * aprof_pub.h). pyaclnn has no profiler: a registered control callback is kept
 * but never called (profiling never starts), reports are refused; the clock
 * and the string hash are implemented. Not in include/: not AscendCL. */
#include <stdint.h>
#include <time.h>

#include "compat/pa_compat.h"
#include "runtime/pa_rt_base.h"

#define PA_MSPROF_ERROR (-1)
#define PA_MSPROF_MODULES 64

typedef int32_t (*pa_prof_command_fn)(uint32_t type, void *data, uint32_t len);

PA_API int32_t MsprofRegisterCallback(uint32_t moduleId, pa_prof_command_fn handle);
PA_API int32_t MsprofReportApi(uint32_t nonPersistantFlag, const void *api);
PA_API int32_t MsprofReportCompactInfo(uint32_t nonPersistantFlag, const void *data, uint32_t length);
PA_API int32_t MsprofReportAdditionalInfo(uint32_t nonPersistantFlag, const void *data, uint32_t length);
PA_API uint64_t MsprofGetHashId(const char *hashInfo, size_t length);
PA_API uint64_t MsprofSysCycleTime(void);

static pa_prof_command_fn g_callbacks[PA_MSPROF_MODULES]; /* guarded by pa_rt_lock */

PA_API int32_t MsprofRegisterCallback(uint32_t moduleId, pa_prof_command_fn handle) {
    if (moduleId >= PA_MSPROF_MODULES || handle == NULL) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "MsprofRegisterCallback: moduleId must be < %d and handle not NULL",
                   PA_MSPROF_MODULES);
        return PA_MSPROF_ERROR;
    }
    pa_rt_lock();
    g_callbacks[moduleId] = handle;
    pa_rt_unlock();
    return 0;
}

#define NO_PROFILER "pyaclnn has no profiler, so profiling data is never collected"

PA_API int32_t MsprofReportApi(uint32_t nonPersistantFlag, const void *api) {
    PA_UNUSED(nonPersistantFlag), PA_UNUSED(api);
    pa_not_supported(ACL_ERROR_PROF_MODULES_UNSUPPORTED, "MsprofReportApi", NO_PROFILER);
    return PA_MSPROF_ERROR;
}

PA_API int32_t MsprofReportCompactInfo(uint32_t nonPersistantFlag, const void *data, uint32_t length) {
    PA_UNUSED(nonPersistantFlag), PA_UNUSED(data), PA_UNUSED(length);
    pa_not_supported(ACL_ERROR_PROF_MODULES_UNSUPPORTED, "MsprofReportCompactInfo", NO_PROFILER);
    return PA_MSPROF_ERROR;
}

PA_API int32_t MsprofReportAdditionalInfo(uint32_t nonPersistantFlag, const void *data, uint32_t length) {
    PA_UNUSED(nonPersistantFlag), PA_UNUSED(data), PA_UNUSED(length);
    pa_not_supported(ACL_ERROR_PROF_MODULES_UNSUPPORTED, "MsprofReportAdditionalInfo", NO_PROFILER);
    return PA_MSPROF_ERROR;
}

/* 64-bit FNV-1a of the bytes: a stable id per string, as the profiler's. */
PA_API uint64_t MsprofGetHashId(const char *hashInfo, size_t length) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; hashInfo != NULL && i < length; i++) {
        h ^= (uint8_t)hashInfo[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The profiler's timestamp: nanoseconds of CLOCK_MONOTONIC. */
PA_API uint64_t MsprofSysCycleTime(void) { return pa_rt_now_ns(); }
