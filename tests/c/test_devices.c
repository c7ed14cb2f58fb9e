/* Several emulated devices (PYACLNN_DEVICE_COUNT=4, set before the first call):
 * the per-thread current device, contexts, streams, events and memory that
 * belong to a device, per-device capacity and aclrtGetMemInfo, copies between
 * devices and peer access, the launch-time address check across devices, and
 * per-device teardown. Plain C; exits 1 on the first failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

#include "pa_check.h"

#define NDEV 4

static int32_t current(void) {
    int32_t d = -1;
    CHECK_OK(aclrtGetDevice(&d));
    return d;
}

static void test_count_and_ids(void) {
    uint32_t n = 0;
    CHECK_OK(aclrtGetDeviceCount(&n));
    CHECK_EQ(n, NDEV);
    CHECK_ERR(aclrtSetDevice(NDEV), ACL_ERROR_RT_INVALID_DEVICEID, "4 devices (0..3");
    CHECK_ERR(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId -1 is invalid");
    int64_t v = 0;
    CHECK_OK(aclGetDeviceCapability(NDEV - 1, ACL_DEVICE_INFO_AI_CORE_NUM, &v));
    CHECK_ERR(aclGetDeviceCapability(NDEV, ACL_DEVICE_INFO_AI_CORE_NUM, &v), ACL_ERROR_RT_INVALID_DEVICEID,
              "deviceId 4");
}

/* Each thread sets its own device; the others' choices do not change it. */
static void *thread_device(void *arg) {
    const int32_t d = (int32_t)(intptr_t)arg;
    CHECK_OK(aclrtSetDevice(d));
    for (int i = 0; i < 200; i++) CHECK_EQ(current(), d);
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    void *p = NULL;
    CHECK_OK(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMemsetAsync(p, 4096, d, 4096, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK_EQ(((unsigned char *)p)[4095], d);
    CHECK_OK(aclrtSynchronizeDevice());
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtResetDevice(d));
    return NULL;
}

static void test_per_thread_device(void) {
    pthread_t th[NDEV];
    for (int d = 0; d < NDEV; d++) CHECK_EQ(pthread_create(&th[d], NULL, thread_device, (void *)(intptr_t)d), 0);
    for (int d = 0; d < NDEV; d++) CHECK_EQ(pthread_join(th[d], NULL), 0);
    CHECK_EQ(current(), 0); /* this thread's device is untouched */
}

static void test_contexts(void) {
    aclrtContext c2 = NULL, cur = NULL;
    CHECK_OK(aclrtCreateContext(&c2, 2)); /* becomes current: device 2 */
    CHECK_EQ(current(), 2);
    CHECK_OK(aclrtGetCurrentContext(&cur));
    CHECK(cur == c2);
    CHECK_OK(aclrtSetDevice(1)); /* the default context of device 1 */
    CHECK_EQ(current(), 1);
    aclrtContext d1 = NULL;
    CHECK_OK(aclrtGetCurrentContext(&d1));
    CHECK(d1 != c2);
    CHECK_OK(aclrtSetCurrentContext(c2));
    CHECK_EQ(current(), 2);
    CHECK_OK(aclrtSetCurrentContext(d1));
    CHECK_EQ(current(), 1);
    CHECK_OK(aclrtDestroyContext(c2));
    CHECK_ERR(aclrtCreateContext(&c2, NDEV), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId 4");
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtSetDevice(0));
}

static void test_capacity_per_device(void) {
    size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total1));
    void *p = NULL;
    CHECK_OK(aclrtMalloc(&p, (size_t)8 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    size_t f = 0, t = 0;
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    CHECK_EQ(t, total1);
    CHECK_EQ(free1 - f, ((size_t)8 << 20) + 32);
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total0));
    CHECK_EQ(total0, total1);
    CHECK_EQ(free0, total0); /* device 0 is untouched */
    /* freeing from any device returns the memory to its own device */
    CHECK_OK(aclrtFree(p));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    CHECK_EQ(f, free1);
    /* the device capacity is exhausted per device, with that device named */
    CHECK_ERR(aclrtMalloc(&p, total1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION, "on device 1");
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtResetDevice(1));
}

static void test_peer_copies(void) {
    const size_t n = 1 << 16;
    void *a = NULL, *b = NULL;
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtMalloc(&a, n, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtMalloc(&b, n, ACL_MEM_MALLOC_HUGE_FIRST));
    memset(a, 7, n);
    int32_t can = 0;
    CHECK_OK(aclrtDeviceCanAccessPeer(&can, 1, 0));
    CHECK_EQ(can, 1);
    CHECK_ERR(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_ERROR_INVALID_PARAM, "cannot be equal to peerDeviceId");
    CHECK_ERR(aclrtDeviceCanAccessPeer(&can, 1, NDEV), ACL_ERROR_RT_INVALID_DEVICEID, "deviceId 4");
    /* without peer access the copy between devices is refused, nothing written */
    memset(b, 0, n);
    CHECK_ERR(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
              "aclrtDeviceEnablePeerAccess(0, 0) on device 1");
    CHECK_EQ(((unsigned char *)b)[0], 0);
    aclrtStream s1 = NULL;
    CHECK_OK(aclrtCreateStream(&s1));
    CHECK_ERR(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s1), ACL_ERROR_INVALID_PARAM,
              "device 1, which runs the copy, has no peer access");
    /* copies between one device and the host need no peer access */
    unsigned char host[16];
    CHECK_OK(aclrtMemcpy(host, sizeof host, a, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_EQ(host[3], 7);
    CHECK_OK(aclrtMemset(a, n, 7, n));
    CHECK_ERR(aclrtDeviceEnablePeerAccess(1, 0), ACL_ERROR_INVALID_PARAM, "cannot be equal");
    CHECK_ERR(aclrtDeviceEnablePeerAccess(0, 1), ACL_ERROR_FEATURE_UNSUPPORTED, "flags must be 0");
    CHECK_OK(aclrtDeviceEnablePeerAccess(0, 0));
    CHECK_OK(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK_EQ(((unsigned char *)b)[n - 1], 7);
    memset(a, 9, n);
    CHECK_OK(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s1));
    CHECK_OK(aclrtSynchronizeStream(s1));
    CHECK_EQ(((unsigned char *)b)[n / 2], 9);
    /* access is per direction: device 0 still cannot reach device 1 */
    CHECK_OK(aclrtSetDevice(0));
    CHECK_ERR(aclrtMemcpy(a, n, b, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
              "device 0, which runs the copy, has no peer access");
    /* a stream's copies run on the stream's device (1), whatever the caller's is */
    CHECK_OK(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s1));
    CHECK_OK(aclrtSynchronizeStream(s1));
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtDeviceDisablePeerAccess(0));
    CHECK_ERR(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "no peer access");
    CHECK_OK(aclrtDestroyStream(s1));
    CHECK_OK(aclrtFree(a));
    CHECK_OK(aclrtFree(b));
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtResetDevice(1));
    CHECK_OK(aclrtResetDevice(0));
}

/* A kernel on device 0 refuses tensors in device 1's memory (507015) until
 * device 0 has peer access to device 1. */
static void test_launch_check_across_devices(void) {
    const int64_t rows = 4, cols = 64;
    const size_t bytes = (size_t)(rows * cols) * sizeof(float);
    void *dy = NULL, *y = NULL, *mask = NULL, *out = NULL;
    CHECK_OK(aclrtSetDevice(1));
    CHECK_OK(aclrtMalloc(&dy, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc(&mask, (size_t)(rows * cols), ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_OK(aclrtMalloc(&out, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int64_t i = 0; i < rows * cols; i++) {
        ((float *)dy)[i] = (float)(i % 3);
        ((float *)y)[i] = 1.0f / (float)cols;
        ((unsigned char *)mask)[i] = 0;
        ((float *)out)[i] = -1.0f;
    }
    int64_t shape[4] = {1, 1, rows, cols}, strides[4] = {rows * cols, rows * cols, cols, 1};
    aclTensor *t_dy = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, dy);
    aclTensor *t_y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, y);
    aclTensor *t_m = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, mask);
    aclTensor *t_o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, out);
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s)); /* on device 0 */
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_OK(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(t_dy, t_y, t_m, 1.0, false, t_o, &ws, &ex));
    CHECK_OK(aclSetAclOpExecutorRepeatable(ex));
    CHECK_OK(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s));
    CHECK_ERR(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION,
              "lies in device 1's aclrtMalloc block");
    CHECK(msg_has("aclrtDeviceEnablePeerAccess(1, 0)") && msg_has("gradOutput storage"));
    CHECK_EQ(((float *)out)[0], -1.0f); /* nothing written */
    CHECK_OK(aclrtDeviceEnablePeerAccess(1, 0));
    CHECK_OK(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s));
    CHECK_OK(aclrtSynchronizeStream(s));
    CHECK(((float *)out)[0] != -1.0f);
    CHECK_OK(aclrtDeviceDisablePeerAccess(1));
    CHECK_OK(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, s));
    CHECK_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
    CHECK_OK(aclDestroyAclOpExecutor(ex));
    CHECK_OK(aclrtDestroyStream(s));
    aclDestroyTensor(t_dy);
    aclDestroyTensor(t_y);
    aclDestroyTensor(t_m);
    aclDestroyTensor(t_o);
    CHECK_OK(aclrtFree(dy));
    CHECK_OK(aclrtFree(y));
    CHECK_OK(aclrtFree(mask));
    CHECK_OK(aclrtFree(out));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclrtResetDevice(1));
}

static void test_reset_tears_down_one_device(void) {
    aclrtStream s0 = NULL, s2 = NULL;
    aclrtEvent e2 = NULL;
    CHECK_OK(aclrtSetDevice(2));
    CHECK_OK(aclrtCreateStream(&s2));
    CHECK_OK(aclrtCreateEvent(&e2));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&s0));
    CHECK_OK(aclrtResetDevice(2)); /* device 2's last reference */
    CHECK_ERR(aclrtSynchronizeStream(s2), ACL_ERROR_INVALID_PARAM, "not a live stream");
    CHECK_ERR(aclrtDestroyEvent(e2), ACL_ERROR_INVALID_PARAM, "not a live event");
    CHECK_OK(aclrtSynchronizeStream(s0)); /* device 0's stream lives on */
    CHECK_OK(aclrtDestroyStream(s0));
    /* a thread whose device was reset has no current device */
    CHECK_OK(aclrtSetDevice(3));
    CHECK_OK(aclrtResetDevice(3));
    int32_t d = -1;
    CHECK_ERR(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL, "aclrtSetDevice");
    CHECK_OK(aclrtSetDevice(0));
}

/* A thread that never chose a device uses device 0 while it is set. */
static void *thread_no_device(void *arg) {
    (void)arg;
    CHECK_EQ(current(), 0);
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    CHECK_OK(aclrtDestroyStream(s));
    return NULL;
}

int main(void) {
    setenv("PYACLNN_DEVICE_COUNT", "4", 1);
    setenv("PYACLNN_DEVICE_MEMORY", "256M", 1);
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    test_count_and_ids();
    test_per_thread_device();
    test_contexts();
    test_capacity_per_device();
    test_peer_copies();
    test_launch_check_across_devices();
    test_reset_tears_down_one_device();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_no_device, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_devices: %d checks passed\n", atomic_load(&g_checks));
    return 0;
}
