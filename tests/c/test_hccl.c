/* HCCL in one process, from C (also run under ASan+UBSan and TSan by
 * tests/sanitize/run.sh): 4 threads as ranks on devices 0..3 run every kind of
 * operation (collectives, in place, groups, batches, barrier) several times
 * on their own streams and check the results; then the error paths that need
 * no peer, a timeout, and HcclCommInitAll driven from one thread. Plain C. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccl/hccl.h"

#include "pa_check.h"

#define N 4
#define ROUNDS 3

static HcclRootInfo g_root;

static float *dev_floats(size_t n, float first, float step) {
    void *p = NULL;
    CHECK_OK(aclrtMalloc(&p, n * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST));
    float *f = p;
    for (size_t i = 0; i < n; i++) f[i] = first + step * (float)i;
    return f;
}

static void *rank_main(void *arg) {
    const uint32_t r = (uint32_t)(intptr_t)arg;
    CHECK_OK(aclrtSetDevice((int32_t)r));
    HcclComm comm = NULL;
    CHECK_OK(HcclCommInitRootInfo(N, &g_root, r, &comm));
    uint32_t id = 99, size = 0;
    CHECK_OK(HcclGetRankId(comm, &id));
    CHECK_OK(HcclGetRankSize(comm, &size));
    CHECK_EQ(id, r);
    CHECK_EQ(size, N);
    aclrtStream s = NULL;
    CHECK_OK(aclrtCreateStream(&s));
    for (int round = 0; round < ROUNDS; round++) {
        /* all-reduce, out of place and in place, 37 elements (uneven blocks) */
        float *a = dev_floats(37, (float)r, 1.0f), *b = dev_floats(37, 0.0f, 0.0f);
        CHECK_OK(HcclAllReduce(a, b, 37, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s));
        CHECK_OK(HcclAllReduce(a, a, 37, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, comm, s));
        /* all-gather of 3 each, reduce-scatter of 2 each */
        float *g = dev_floats(3, (float)(10 * r), 1.0f), *gout = dev_floats(3 * N, 0.0f, 0.0f);
        CHECK_OK(HcclAllGather(g, gout, 3, HCCL_DATA_TYPE_FP32, comm, s));
        float *rs = dev_floats(2 * N, 1.0f, 0.0f), *rsout = dev_floats(2, 0.0f, 0.0f);
        CHECK_OK(HcclReduceScatter(rs, rsout, 2, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_PROD, comm, s));
        /* broadcast from rank 2, a ring of sends in a group, a batch the other way, a barrier */
        float *bc = dev_floats(5, r == 2 ? 7.0f : 0.0f, 0.0f);
        CHECK_OK(HcclBroadcast(bc, 5, HCCL_DATA_TYPE_FP32, 2, comm, s));
        float *tok = dev_floats(4, (float)r, 0.0f), *got = dev_floats(4, -1.0f, 0.0f), *back = dev_floats(4, -1.0f, 0.0f);
        CHECK_OK(HcclGroupStart());
        CHECK_OK(HcclSend(tok, 4, HCCL_DATA_TYPE_FP32, (r + 1) % N, comm, s));
        CHECK_OK(HcclRecv(got, 4, HCCL_DATA_TYPE_FP32, (r + N - 1) % N, comm, s));
        CHECK_OK(HcclGroupEnd());
        HcclSendRecvItem items[2] = {{HCCL_SEND, tok, 4, HCCL_DATA_TYPE_FP32, (r + N - 1) % N},
                                     {HCCL_RECV, back, 4, HCCL_DATA_TYPE_FP32, (r + 1) % N}};
        CHECK_OK(HcclBatchSendRecv(items, 2, comm, s));
        /* all-to-all-v: rank i sends i+1 elements to every rank */
        uint64_t sc[N], sd[N], rc[N], rd[N];
        for (uint32_t q = 0; q < N; q++) {
            sc[q] = r + 1;
            sd[q] = q * (r + 1);
            rc[q] = q + 1;
            rd[q] = q == 0 ? 0 : rd[q - 1] + rc[q - 1];
        }
        float *av = dev_floats(N * (r + 1), (float)(100 * r), 1.0f), *avout = dev_floats(N * (N + 1) / 2, 0.0f, 0.0f);
        CHECK_OK(HcclAlltoAllV(av, sc, sd, HCCL_DATA_TYPE_FP32, avout, rc, rd, HCCL_DATA_TYPE_FP32, comm, s));
        CHECK_OK(HcclBarrier(comm, s));
        CHECK_OK(aclrtSynchronizeStream(s));
        for (int i = 0; i < 37; i++) {
            CHECK_EQ(b[i], 6.0f + 4.0f * (float)i); /* 0+1+2+3 + 4i */
            CHECK_EQ(a[i], 3.0f + (float)i);        /* max over ranks */
        }
        for (uint32_t q = 0; q < N; q++) {
            for (int i = 0; i < 3; i++) CHECK_EQ(gout[q * 3 + i], (float)(10 * q + (uint32_t)i));
        }
        CHECK_EQ(rsout[0], 1.0f);
        CHECK_EQ(bc[4], 7.0f);
        CHECK_EQ(got[3], (float)((r + N - 1) % N));
        CHECK_EQ(back[0], (float)((r + 1) % N));
        for (uint32_t q = 0; q < N; q++) {
            for (uint32_t i = 0; i <= q; i++) CHECK_EQ(avout[rd[q] + i], (float)(100 * q + r * (q + 1) + i));
        }
        float *all[] = {a, b, g, gout, rs, rsout, bc, tok, got, back, av, avout};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CHECK_OK(aclrtFree(all[i]));
    }
    HcclResult async = HCCL_E_INTERNAL;
    CHECK_OK(HcclGetCommAsyncError(comm, &async));
    CHECK_EQ(async, HCCL_SUCCESS);
    CHECK_OK(aclrtDestroyStream(s));
    CHECK_OK(HcclCommDestroy(comm));
    CHECK_EQ(HcclCommDestroy(comm), HCCL_E_PARA);
    CHECK_OK(aclrtResetDevice((int32_t)r));
    return NULL;
}

static void test_threads(void) {
    CHECK_OK(HcclGetRootInfo(&g_root));
    pthread_t th[N];
    for (int r = 0; r < N; r++) CHECK_EQ(pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r), 0);
    for (int r = 0; r < N; r++) CHECK_EQ(pthread_join(th[r], NULL), 0);
}

static void test_errors_and_timeout(void) {
    HcclRootInfo root;
    CHECK_EQ(HcclGetRootInfo(NULL), HCCL_E_PTR);
    CHECK_OK(HcclGetRootInfo(&root));
    HcclComm comm = NULL;
    CHECK_EQ(HcclCommInitRootInfo(2, &root, 2, &comm), HCCL_E_PARA);
    CHECK_EQ(HcclCommInitRootInfo(2, NULL, 0, &comm), HCCL_E_PTR);
    CHECK(strstr(aclGetRecentErrMsg(), "rootInfo must not be NULL") != NULL);
    /* one rank of two: HCCL_CONNECT_TIMEOUT (2 s here) */
    CHECK_EQ(HcclCommInitRootInfo(2, &root, 0, &comm), HCCL_E_TIMEOUT);
    CHECK(strstr(aclGetRecentErrMsg(), "missing: 1") != NULL);
    CHECK(strcmp(HcclGetErrorString(HCCL_E_TIMEOUT), "timeout") == 0);
    HcclConfigValue v = {1};
    CHECK_OK(HcclSetConfig(HCCL_DETERMINISTIC, v));
    v.value = 0;
    CHECK_OK(HcclGetConfig(HCCL_DETERMINISTIC, &v));
    CHECK_EQ(v.value, 1);
    CHECK_EQ(HcclCreateSubCommConfig(NULL, 0, NULL, 0, 0, NULL, NULL), HCCL_E_NOT_SUPPORT);
    CHECK(strstr(aclGetRecentErrMsg(), "HcclCreateSubCommConfig is not supported") != NULL);
}

/* One thread drives all ranks of HcclCommInitAll, each on its own stream. */
static void test_init_all(void) {
    int32_t devs[N] = {0, 1, 2, 3};
    HcclComm comms[N];
    CHECK_OK(HcclCommInitAll(N, devs, comms));
    aclrtStream st[N];
    int32_t *buf[N];
    for (int i = 0; i < N; i++) {
        CHECK_OK(aclrtSetDevice(i));
        CHECK_OK(aclrtCreateStream(&st[i]));
        void *p = NULL;
        CHECK_OK(aclrtMalloc(&p, 2 * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST));
        buf[i] = p;
        buf[i][0] = i;
        buf[i][1] = -i;
        CHECK_OK(HcclAllReduce(buf[i], buf[i], 2, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comms[i], st[i]));
    }
    for (int i = 0; i < N; i++) {
        CHECK_OK(aclrtSynchronizeStream(st[i]));
        CHECK_EQ(buf[i][0], 6);
        CHECK_EQ(buf[i][1], -6);
        CHECK_OK(aclrtDestroyStream(st[i]));
        CHECK_OK(aclrtFree(buf[i]));
        CHECK_OK(HcclCommDestroy(comms[i]));
        CHECK_OK(aclrtResetDevice(i));
    }
}

int main(void) {
    setenv("PYACLNN_DEVICE_COUNT", "4", 1);
    setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    test_threads();
    test_errors_and_timeout();
    test_init_all();
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_hccl: %d checks passed\n", atomic_load(&g_checks));
    return 0;
}
