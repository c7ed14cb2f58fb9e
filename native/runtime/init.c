/* aclInit / aclFinalize, error reporting, version and small acl_base.h
 * helpers: the top of the runtime (aclFinalize resets every device). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pa_half.h"
#include "meta/pa_tensor.h"
#include "runtime/pa_device.h"

/* ---------------------------------------------------------------------------
 * aclInit / aclFinalize
 * ------------------------------------------------------------------------- */

enum { PA_INIT_NEVER = 0, PA_INIT_ACTIVE = 1, PA_INIT_FINALIZED = 2 };
static int g_init_state = PA_INIT_NEVER; /* guarded by pa_rt_lock */

PA_API aclError aclInit(const char *configPath) {
    if (configPath != NULL && configPath[0] != '\0') {
        struct stat st;
        if (stat(configPath, &st) != 0) {
            return pa_rt_fail(ACL_ERROR_INVALID_FILE, "aclInit: configPath \"%s\" cannot be opened (%s)",
                              configPath, strerror(errno));
        }
        if (S_ISDIR(st.st_mode)) {
            return pa_rt_fail(ACL_ERROR_INVALID_FILE, "aclInit: configPath \"%s\" is a directory, expected a file",
                              configPath);
        }
        /* The content (dump / profiling configuration) is ignored by the emulation. */
    }
    pa_rt_lock();
    if (g_init_state == PA_INIT_ACTIVE) {
        pa_rt_unlock();
        return pa_rt_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (call aclFinalize first)");
    }
    g_init_state = PA_INIT_ACTIVE;
    pa_rt_unlock();
    return ACL_SUCCESS;
}

PA_API aclError aclFinalize(void) {
    pa_rt_lock();
    int state = g_init_state;
    if (state == PA_INIT_ACTIVE) g_init_state = PA_INIT_FINALIZED;
    pa_rt_unlock();
    if (state == PA_INIT_FINALIZED) {
        return pa_rt_fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: already finalized");
    }
    if (state == PA_INIT_NEVER) {
        return pa_rt_fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
    }
    /* Drain and release every stream / event / context and reset the device.
     * Device memory stays valid until aclrtFree (the emulation never pulls
     * memory out from under a caller that still holds a pointer). */
    pa_device_teardown_all();
    return ACL_SUCCESS;
}

PA_API const char *aclGetRecentErrMsg(void) {
    const char *msg = pa_get_errmsg();
    return (msg == NULL || msg[0] == '\0') ? NULL : msg;
}

PA_API aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
    if (majorVersion == NULL || minorVersion == NULL || patchVersion == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: majorVersion, minorVersion and patchVersion "
                                                   "must not be NULL");
    }
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Last error (thread level)
 * ------------------------------------------------------------------------- */

PA_API aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
    if (level != ACL_RT_THREAD_LEVEL) {
        return pa_fail(ACL_ERROR_INVALID_PARAM, "aclrtPeekAtLastError: level must be ACL_RT_THREAD_LEVEL (0), got %d",
                       (int)level);
    }
    return pa_rt_last_error(false);
}

PA_API aclError aclrtGetLastError(aclrtLastErrLevel level) {
    if (level != ACL_RT_THREAD_LEVEL) {
        return pa_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetLastError: level must be ACL_RT_THREAD_LEVEL (0), got %d",
                       (int)level);
    }
    return pa_rt_last_error(true);
}

/* Kernels run on the host and cannot hang the way device kernels can; the
 * timeouts are accepted and ignored. */
PA_API aclError aclrtSetOpExecuteTimeOut(uint32_t timeout) {
    PA_UNUSED(timeout);
    return ACL_SUCCESS;
}

PA_API aclError aclrtSetOpWaitTimeout(uint32_t timeout) {
    PA_UNUSED(timeout);
    return ACL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * acl_base.h helpers
 * ------------------------------------------------------------------------- */

PA_API size_t aclDataTypeSize(aclDataType dataType) { return pa_dtype_size(dataType); }

PA_API float aclFloat16ToFloat(aclFloat16 value) { return pa_f16_to_f32(value); }

PA_API aclFloat16 aclFloatToFloat16(float value) { return pa_f32_to_f16(value); }

static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;
static int g_log_level = ACL_ERROR;

static void log_level_init(void) {
    const char *s = getenv("ASCEND_GLOBAL_LOG_LEVEL");
    if (s != NULL && s[0] >= '0' && s[0] <= '4' && s[1] == '\0') g_log_level = s[0] - '0';
}

PA_API void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line, const char *fmt,
                      ...) {
    pthread_once(&g_log_once, log_level_init);
    if ((int)logLevel < g_log_level || fmt == NULL) return;
    static const char *const names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    const char *lv = ((int)logLevel >= 0 && (int)logLevel <= 3) ? names[logLevel] : "LOG";
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "?");
    /* One fprintf call so concurrent log lines do not interleave mid-line. */
    fprintf(stderr, "[%s] APP(%ld) %s %s:%u: %s\n", lv, (long)getpid(), func ? func : "?", base, (unsigned)line,
            msg);
}
