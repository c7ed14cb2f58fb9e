/* aclSetCompileopt / aclGetCompileopt(Size) / aclopSetCompileFlag: process-wide
 * compile options, stored and reported as CANN does. Nothing is compiled on the
 * CPU, so none changes what an op computes; ACL_OP_JIT_COMPILE defaults to
 * "disable" (prebuilt kernels), which is what pyaclnn's ops are. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl_op_compiler.h"
#include "compat/pa_compat.h"
#include "runtime/pa_rt_base.h"

#define PA_NUM_COMPILEOPT ((int)ACL_OP_DEBUG_OPTION + 1)
/* Longest value (with its NUL); aclGetCompileoptSize reports it for every option. */
#define PA_COMPILEOPT_CAP 4096

static pthread_mutex_t g_opt_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_opt[PA_NUM_COMPILEOPT][PA_COMPILEOPT_CAP];
static bool g_opt_init;
static int g_compile_flag = ACL_OP_COMPILE_DEFAULT;

/* With g_opt_mu held. */
static void init_defaults(void) {
    if (g_opt_init) return;
    snprintf(g_opt[ACL_OP_JIT_COMPILE], PA_COMPILEOPT_CAP, "disable");
    g_opt_init = true;
}

static bool opt_ok(aclCompileOpt opt) { return (int)opt >= 0 && (int)opt < PA_NUM_COMPILEOPT; }

PA_API aclError aclSetCompileopt(aclCompileOpt opt, const char *value) {
    if (!opt_ok(opt)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclSetCompileopt: opt must be an aclCompileOpt (0..%d), got %d",
                          PA_NUM_COMPILEOPT - 1, (int)opt);
    }
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclSetCompileopt: value must not be NULL");
    const size_t n = strnlen(value, PA_COMPILEOPT_CAP);
    if (n >= PA_COMPILEOPT_CAP) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclSetCompileopt: value must be shorter than %d bytes",
                          PA_COMPILEOPT_CAP);
    }
    if (opt == ACL_OP_JIT_COMPILE && strcmp(value, "enable") != 0 && strcmp(value, "disable") != 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclSetCompileopt: ACL_OP_JIT_COMPILE must be \"enable\" or \"disable\", got \"%s\"", value);
    }
    pthread_mutex_lock(&g_opt_mu);
    init_defaults();
    memcpy(g_opt[opt], value, n + 1);
    pthread_mutex_unlock(&g_opt_mu);
    return ACL_SUCCESS;
}

PA_API size_t aclGetCompileoptSize(aclCompileOpt opt) {
    if (!opt_ok(opt)) {
        pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetCompileoptSize: opt must be an aclCompileOpt (0..%d), got %d",
                   PA_NUM_COMPILEOPT - 1, (int)opt);
        return 0;
    }
    return PA_COMPILEOPT_CAP;
}

PA_API aclError aclGetCompileopt(aclCompileOpt opt, char *value, size_t length) {
    if (!opt_ok(opt)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetCompileopt: opt must be an aclCompileOpt (0..%d), got %d",
                          PA_NUM_COMPILEOPT - 1, (int)opt);
    }
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetCompileopt: value must not be NULL");
    pthread_mutex_lock(&g_opt_mu);
    init_defaults();
    const size_t n = strlen(g_opt[opt]);
    aclError rc = ACL_SUCCESS;
    if (length <= n) {
        rc = pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                        "aclGetCompileopt: length %zu is too small for the value of option %d (%zu bytes with the "
                        "NUL; aclGetCompileoptSize gives enough)",
                        length, (int)opt, n + 1);
    } else {
        memcpy(value, g_opt[opt], n + 1);
    }
    pthread_mutex_unlock(&g_opt_mu);
    return rc;
}

PA_API aclError aclopSetCompileFlag(aclOpCompileFlag flag) {
    if (flag != ACL_OP_COMPILE_DEFAULT && flag != ACL_OP_COMPILE_FUZZ) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclopSetCompileFlag: flag must be ACL_OP_COMPILE_DEFAULT (0) or ACL_OP_COMPILE_FUZZ (1), "
                          "got %d",
                          (int)flag);
    }
    pthread_mutex_lock(&g_opt_mu);
    g_compile_flag = (int)flag;
    pthread_mutex_unlock(&g_opt_mu);
    return ACL_SUCCESS;
}
