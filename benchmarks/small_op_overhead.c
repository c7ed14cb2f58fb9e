#define _POSIX_C_SOURCE 200809L
/* Small-op overhead: GetWorkspaceSize + launch + synchronize of a [1,1,1,16]
 * aclnnScaledMaskedSoftmaxBackward, from C. usage: small_op_overhead [calls]
 * Prints the median over 7 batches of microseconds per call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

#define CHECK(x) do { int rc_ = (x); if (rc_ != 0) { fprintf(stderr, "%s failed: %d\n", #x, rc_); return 1; } } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 20000;
    int64_t shape[4] = {1, 1, 1, 16};
    aclrtStream stream;
    void *g, *y, *m, *o;
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(&stream));
    CHECK(aclrtMalloc(&g, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&y, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&m, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&o, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(g, 64, 0, 64));
    CHECK(aclrtMemset(y, 64, 0, 64));
    CHECK(aclrtMemset(m, 16, 0, 16));
    aclTensor *tg = aclCreateTensor(shape, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 4, g);
    aclTensor *ty = aclCreateTensor(shape, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 4, y);
    aclTensor *tm = aclCreateTensor(shape, 4, ACL_BOOL, NULL, 0, ACL_FORMAT_ND, shape, 4, m);
    aclTensor *to = aclCreateTensor(shape, 4, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, shape, 4, o);
    double per_batch[7];
    for (int b = 0; b < 7; b++) {
        double t0 = now();
        for (int i = 0; i < calls; i++) {
            uint64_t ws = 0;
            aclOpExecutor *ex = NULL;
            CHECK(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(tg, ty, tm, 1.0, false, to, &ws, &ex));
            CHECK(aclnnScaledMaskedSoftmaxBackward(NULL, 0, ex, stream));
            CHECK(aclrtSynchronizeStream(stream));
        }
        per_batch[b] = (now() - t0) / calls * 1e6;
    }
    qsort(per_batch, 7, sizeof per_batch[0], cmp);
    printf("%.3f\n", per_batch[3]);
    aclDestroyTensor(tg); aclDestroyTensor(ty); aclDestroyTensor(tm); aclDestroyTensor(to);
    aclrtFree(g); aclrtFree(y); aclrtFree(m); aclrtFree(o);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
