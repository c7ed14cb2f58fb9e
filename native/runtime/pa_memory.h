/* The access check every kernel launch and collective makes before it touches
 * memory (memory.c). */
#ifndef PA_MEMORY_H
#define PA_MEMORY_H

#include <stdint.h>

/* 0 if work running on `device` may read and write [p, p+bytes): the range
 * lies inside one live device-accessible range (an aclrtMalloc block with its
 * 32 bytes of padding, an aclrtHostRegister range, a mapped virtual range) that
 * belongs to `device`, to a device it has peer access to, or to the host.
 * Called by a stream task, it also accepts a block given to aclrtFree after
 * that task was queued (its memory is released only once such tasks finished).
 * Otherwise records a message naming `api` and `what` (e.g. "x storage") and
 * returns ACL_ERROR_RT_AICORE_EXCEPTION (507015, the NPU's code for an
 * out-of-range DDR address). PYACLNN_CHECK_ADDRESSES=0 turns the check off
 * (it then always returns 0). */
int pa_mem_check_access(const char *api, const char *what, const void *p, uint64_t bytes, int device);

#endif
