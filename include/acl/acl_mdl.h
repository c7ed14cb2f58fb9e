/* pyaclnn: placeholder. The aclmdl* (offline model) API is not provided. */
#ifndef INC_EXTERNAL_ACL_ACL_MODEL_H_
#define INC_EXTERNAL_ACL_ACL_MODEL_H_

#include "acl_base.h"

#endif /* INC_EXTERNAL_ACL_ACL_MODEL_H_ */
