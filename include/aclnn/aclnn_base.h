/*
 * pyaclnn: aclnn base header (pulls in the meta API; aclnnInit/aclnnFinalize).
 */
#ifndef INC_EXTERNAL_ACLNN_ACLNN_BASE_H_
#define INC_EXTERNAL_ACLNN_ACLNN_BASE_H_

#ifdef __cplusplus
#include <cstdint>
#include <cstdlib>
#else
#include <stdint.h>
#include <stddef.h>
#endif

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lightweight alternative to aclInit for aclnn-only programs; configPath
 * (JSON) may be NULL. Calling it together with aclInit is harmless. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACLNN_ACLNN_BASE_H_ */
