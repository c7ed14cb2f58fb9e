/* Device-level settings torch_npu makes at start-up, implemented: the float
 * overflow (saturation) mode, the device-side process id, and CANN's package
 * version strings. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "acl/acl.h"
#include "compat/pa_compat.h"
#include "runtime/pa_rt_base.h"

/* The CPU computes IEEE floats: +-inf and NaN, never saturation. */
static atomic_int g_sat_mode = ACL_RT_OVERFLOW_MODE_INFNAN;

PA_API aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode) {
    if (mode == ACL_RT_OVERFLOW_MODE_INFNAN) {
        atomic_store(&g_sat_mode, (int)mode);
        return ACL_SUCCESS;
    }
    if (mode == ACL_RT_OVERFLOW_MODE_SATURATION) {
        return pa_rt_fail(ACL_ERROR_FEATURE_UNSUPPORTED,
                          "aclrtSetDeviceSatMode: ACL_RT_OVERFLOW_MODE_SATURATION is not supported by pyaclnn: the "
                          "CPU kernels compute IEEE inf/NaN (ACL_RT_OVERFLOW_MODE_INFNAN, the mode in effect)");
    }
    return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                      "aclrtSetDeviceSatMode: mode must be ACL_RT_OVERFLOW_MODE_SATURATION (0) or "
                      "ACL_RT_OVERFLOW_MODE_INFNAN (1), got %d",
                      (int)mode);
}

PA_API aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode) {
    if (mode == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceSatMode: mode must not be NULL");
    *mode = (aclrtFloatOverflowMode)atomic_load(&g_sat_mode);
    return ACL_SUCCESS;
}

PA_API aclError aclrtDeviceGetBareTgid(int32_t *pid) {
    if (pid == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclrtDeviceGetBareTgid: pid must not be NULL");
    *pid = (int32_t)getpid();
    return ACL_SUCCESS;
}

static const aclCannAttr g_attrs[] = {ACL_CANN_ATTR_INF_NAN, ACL_CANN_ATTR_BF16, ACL_CANN_ATTR_JIT_COMPILE};

PA_API aclError aclGetCannAttributeList(const aclCannAttr **cannAttrList, size_t *num) {
    if (cannAttrList == NULL || num == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetCannAttributeList: cannAttrList and num must not be NULL");
    }
    *cannAttrList = g_attrs;
    *num = sizeof g_attrs / sizeof g_attrs[0];
    return ACL_SUCCESS;
}

PA_API aclError aclGetCannAttribute(aclCannAttr cannAttr, int32_t *value) {
    if (value == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclGetCannAttribute: value must not be NULL");
    switch (cannAttr) {
    case ACL_CANN_ATTR_INF_NAN: *value = 1; return ACL_SUCCESS; /* IEEE arithmetic */
    case ACL_CANN_ATTR_BF16: *value = 1; return ACL_SUCCESS;
    case ACL_CANN_ATTR_JIT_COMPILE: *value = 0; return ACL_SUCCESS; /* nothing is compiled online */
    default:
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclGetCannAttribute: cannAttr must be ACL_CANN_ATTR_INF_NAN (0), _BF16 (1) or "
                          "_JIT_COMPILE (2), got %d",
                          (int)cannAttr);
    }
}

/* Package names aclsysGetVersionStr knows: the aclCANNPackageName ones and the
 * components of CANN's newer package layout. Every one has pyaclnn's version. */
static const char *const g_packages[] = {
    "CANN", "RUNTIME", "COMPILER", "HCCL", "TOOLKIT", "OPP", "OPP_KERNEL", "DRIVER",
    "acl_extend", "aoe", "asc-devkit", "ascendnpu-ir", "asc-tools", "bisheng-compiler", "dflow-executor",
    "dvpp", "ge-compiler", "ge-executor", "graph_autofusion", "hccl", "hcomm", "hixl", "metadef", "ncs",
    "oam_tools", "opbase", "ops_cv", "ops_legacy", "ops_math", "ops_nn", "ops_transformer", "pto_isa",
    "pyACL", "runtime", "tbe-tik", "test-ops",
};

PA_API aclError aclsysGetVersionStr(char *pkgName, char *versionStr) {
    if (pkgName == NULL || versionStr == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "aclsysGetVersionStr: pkgName and versionStr must not be NULL");
    }
    bool known = false;
    for (size_t i = 0; i < sizeof g_packages / sizeof g_packages[0] && !known; i++) {
        known = strcmp(pkgName, g_packages[i]) == 0;
    }
    if (!known) {
        return pa_rt_fail(ACL_ERROR_INVALID_FILE,
                          "aclsysGetVersionStr: no CANN package named \"%.64s\" (expected e.g. CANN, RUNTIME, "
                          "COMPILER, HCCL, OPP, DRIVER, runtime, opbase, ops_nn)",
                          pkgName);
    }
    aclCANNPackageVersion v;
    const aclError rc = aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &v);
    if (rc != ACL_SUCCESS) return rc;
    snprintf(versionStr, ACL_PKG_VERSION_MAX_SIZE, "%s", v.version);
    return ACL_SUCCESS;
}
