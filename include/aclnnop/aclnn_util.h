/* pyaclnn: visibility macro used by aclnnop operator headers. */
#ifndef INC_EXTERNAL_ACLNNOP_ACLNN_UTIL_H_
#define INC_EXTERNAL_ACLNNOP_ACLNN_UTIL_H_

#ifndef ACLNN_API
#define ACLNN_API __attribute__((visibility("default")))
#endif

#endif /* INC_EXTERNAL_ACLNNOP_ACLNN_UTIL_H_ */
