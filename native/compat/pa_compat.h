/* Entry points torch_npu needs from a CANN toolkit beyond pyaclnn's runtime and
 * ops: what pyaclnn can do is implemented (compile options, saturation mode,
 * version strings, the profiling clock and hash), the rest answers CANN's
 * "not supported" status through pa_not_supported. */
#ifndef PA_COMPAT_H
#define PA_COMPAT_H

#include "common/pa_common.h"

/* Records "<api>: not supported by pyaclnn (<why>)" for aclGetRecentErrMsg(),
 * logs it at WARNING level (shown when ASCEND_GLOBAL_LOG_LEVEL <= 2), and
 * returns `code`. */
int pa_not_supported(int code, const char *api, const char *why);

#endif
