/* The "not supported" answer of every stand-in entry point, and the entry points
 * that cannot work on a CPU: device kernel binaries, memory shared with other
 * processes, and the internal rt* calls of CANN's libruntime.so that torch_npu
 * links against. */
#include <stdint.h>
#include <stdio.h>

#include "acl/acl.h"
#include "compat/pa_compat.h"
#include "runtime/pa_rt_base.h"

int pa_not_supported(int code, const char *api, const char *why) {
    pa_rt_fail(code, "%s: not supported by pyaclnn (%s)", api, why);
    aclAppLog(ACL_WARNING, api, __FILE__, __LINE__, "%s: not supported by pyaclnn (%s)", api, why);
    return code;
}

#define NO_KERNEL_BINARIES "device kernel binaries cannot run on the CPU"
#define NO_IPC_MEMORY "device memory is not shared between processes"

PA_API aclError aclrtBinaryLoadFromData(const void *data, size_t length, const aclrtBinaryLoadOptions *options,
                                        aclrtBinHandle *binHandle) {
    PA_UNUSED(data), PA_UNUSED(length), PA_UNUSED(options), PA_UNUSED(binHandle);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtBinaryLoadFromData", NO_KERNEL_BINARIES);
}

PA_API aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                       aclrtFuncHandle *funcHandle) {
    PA_UNUSED(binHandle), PA_UNUSED(kernelName), PA_UNUSED(funcHandle);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtBinaryGetFunction", NO_KERNEL_BINARIES);
}

PA_API aclError aclrtGetFunctionAddr(aclrtFuncHandle funcHandle, void **aicAddr, void **aivAddr) {
    PA_UNUSED(funcHandle), PA_UNUSED(aicAddr), PA_UNUSED(aivAddr);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtGetFunctionAddr", NO_KERNEL_BINARIES);
}

PA_API aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType,
                                                uint64_t flags, uint64_t *shareableHandle) {
    PA_UNUSED(handle), PA_UNUSED(handleType), PA_UNUSED(flags), PA_UNUSED(shareableHandle);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtMemExportToShareableHandle", NO_IPC_MEMORY);
}

PA_API aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                                  aclrtDrvMemHandle *handle) {
    PA_UNUSED(shareableHandle), PA_UNUSED(deviceId), PA_UNUSED(handle);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtMemImportFromShareableHandle", NO_IPC_MEMORY);
}

PA_API aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid, size_t pidNum) {
    PA_UNUSED(shareableHandle), PA_UNUSED(pid), PA_UNUSED(pidNum);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclrtMemSetPidToShareableHandle", NO_IPC_MEMORY);
}

/* ---- CANN's internal runtime (libruntime.so) calls: rtError_t, whose
 * "not supported" is ACL_ERROR_RT_FEATURE_NOT_SUPPORT. torch_npu uses them only
 * to launch its own device kernels. Not in include/: they are not AscendCL. */
typedef int32_t pa_rt_error;

PA_API pa_rt_error rtKernelLaunch(const void *stubFunc, uint32_t blockDim, void *args, uint32_t argsSize,
                                  void *smDesc, void *stream);
PA_API pa_rt_error rtDevBinaryRegister(const void *bin, void **handle);
PA_API pa_rt_error rtFunctionRegister(void *binHandle, const void *stubFunc, const char *stubName,
                                      const void *devFunc, uint32_t funcMode);
PA_API pa_rt_error rtGetC2cCtrlAddr(uint64_t *addr, uint32_t *len);

PA_API pa_rt_error rtKernelLaunch(const void *stubFunc, uint32_t blockDim, void *args, uint32_t argsSize,
                                  void *smDesc, void *stream) {
    PA_UNUSED(stubFunc), PA_UNUSED(blockDim), PA_UNUSED(args), PA_UNUSED(argsSize), PA_UNUSED(smDesc),
        PA_UNUSED(stream);
    return pa_not_supported(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "rtKernelLaunch", NO_KERNEL_BINARIES);
}

PA_API pa_rt_error rtDevBinaryRegister(const void *bin, void **handle) {
    PA_UNUSED(bin), PA_UNUSED(handle);
    return pa_not_supported(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "rtDevBinaryRegister", NO_KERNEL_BINARIES);
}

PA_API pa_rt_error rtFunctionRegister(void *binHandle, const void *stubFunc, const char *stubName,
                                      const void *devFunc, uint32_t funcMode) {
    PA_UNUSED(binHandle), PA_UNUSED(stubFunc), PA_UNUSED(stubName), PA_UNUSED(devFunc), PA_UNUSED(funcMode);
    return pa_not_supported(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "rtFunctionRegister", NO_KERNEL_BINARIES);
}

PA_API pa_rt_error rtGetC2cCtrlAddr(uint64_t *addr, uint32_t *len) {
    PA_UNUSED(addr), PA_UNUSED(len);
    return pa_not_supported(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "rtGetC2cCtrlAddr",
                            "the emulated device has no chip-to-chip control registers");
}

/* ---- offline-model dump (acl_mdl.h) ---- */
#define NO_DUMP "pyaclnn has no model or operator dump"

PA_API aclError aclmdlInitDump(void) {
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclmdlInitDump", NO_DUMP);
}

PA_API aclError aclmdlSetDump(const char *dumpCfgPath) {
    PA_UNUSED(dumpCfgPath);
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclmdlSetDump", NO_DUMP);
}

PA_API aclError aclmdlFinalizeDump(void) {
    return pa_not_supported(ACL_ERROR_API_NOT_SUPPORT, "aclmdlFinalizeDump", NO_DUMP);
}
