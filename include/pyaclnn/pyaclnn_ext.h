/*
 * pyaclnn's own extension API (not part of CANN): runtime introspection
 * and CPU tuning knobs.
 */
#ifndef PYACLNN_PYACLNN_EXT_H_
#define PYACLNN_PYACLNN_EXT_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* JSON text describing the runtime: ISA tier, thread count, version.
 * The string is owned by the library and valid until the next call on the
 * same thread; NULL when host memory ran out. */
ACL_FUNC_VISIBILITY const char *pyaclnnGetRuntimeInfo(void);

/* Cap the SIMD tier used by kernels: "scalar" | "avx2" | "avx512" | "avx512bf16".
 * NULL resets to the best tier detected on this CPU. Can only lower the
 * tier below what the CPU supports, never raise it. */
ACL_FUNC_VISIBILITY aclError pyaclnnSetMaxIsa(const char *tier);

/* Number of worker threads for kernels; 0 selects the default. */
ACL_FUNC_VISIBILITY aclError pyaclnnSetNumThreads(int32_t n);
ACL_FUNC_VISIBILITY int32_t pyaclnnGetNumThreads(void);

/* Live entries of the runtime's memory registry of one kind: 0 aclrtMalloc
 * blocks, 1 aclrtMallocHost blocks, 2 aclrtHostRegister ranges, 3 aclrtMapMem
 * mappings. *bytes (may be NULL) gets their total size. */
ACL_FUNC_VISIBILITY uint64_t pyaclnnCountMemRanges(int32_t kind, uint64_t *bytes);

/* Live aclnn handles of one kind: 1 aclTensor, 2 aclScalar, 3 aclIntArray,
 * 4 aclFloatArray, 5 aclBoolArray, 6 aclTensorList, 7 aclScalarList, 8 aclopAttr; 0 all. */
ACL_FUNC_VISIBILITY uint64_t pyaclnnCountHandles(int32_t kind);

/* ISA tier currently in use ("scalar", "avx2", "avx512" or "avx512bf16"). */
ACL_FUNC_VISIBILITY const char *pyaclnnGetIsa(void);

#ifdef __cplusplus
}
#endif

#endif /* PYACLNN_PYACLNN_EXT_H_ */
