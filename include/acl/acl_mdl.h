/*
 * pyaclnn: AscendCL model API (CANN's acl/acl_mdl.h). Offline models (aclmdlLoad*,
 * aclmdlExecute, ...) are not provided; only the dump calls torch_npu makes are
 * here, and they return ACL_ERROR_API_NOT_SUPPORT with a message (pyaclnn has
 * no model or operator dump).
 */
#ifndef INC_EXTERNAL_ACL_ACL_MODEL_H_
#define INC_EXTERNAL_ACL_ACL_MODEL_H_

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclError aclmdlInitDump(void);
ACL_FUNC_VISIBILITY aclError aclmdlSetDump(const char *dumpCfgPath);
ACL_FUNC_VISIBILITY aclError aclmdlFinalizeDump(void);

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACL_ACL_MODEL_H_ */
