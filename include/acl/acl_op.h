/* pyaclnn: placeholder. The aclop* (single-operator model) API is not provided; use aclnn. */
#ifndef INC_EXTERNAL_ACL_ACL_OP_H_
#define INC_EXTERNAL_ACL_ACL_OP_H_

#include "acl_base.h"

#endif /* INC_EXTERNAL_ACL_ACL_OP_H_ */
