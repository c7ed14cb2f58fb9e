/* The parts of a CANN toolkit torch_npu needs beyond the four operators, from C
 * (so the sanitizer builds run them too): the implemented stand-ins (compile
 * options, saturation mode, version strings, CANN attributes, the profiler's
 * clock and hash), the not-supported ones (status and message), the single-op
 * API (attributes; ScaledMaskedSoftmax with fixed_triu_mask against the aclnn op
 * on the triu mask; Identity into FRACTAL_NZ and back; Cast) and the plumbing
 * aclnn ops (strided copy with a cast, add, fill, reduce sum). Exits 1 on the
 * first failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_copy.h"
#include "aclnnop/aclnn_fill_scalar.h"
#include "aclnnop/aclnn_reduce_sum.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"

#include "pa_check.h"

/* CANN's internal runtime and profiler entry points (not AscendCL: no header). */
int32_t rtKernelLaunch(const void *stubFunc, uint32_t blockDim, void *args, uint32_t argsSize, void *smDesc,
                       void *stream);
int32_t MsprofReportApi(uint32_t nonPersistantFlag, const void *api);
uint64_t MsprofGetHashId(const char *hashInfo, size_t length);
uint64_t MsprofSysCycleTime(void);

static void test_stand_ins(void) {
    aclrtBinHandle bin = NULL;
    CHECK_ERR(aclrtBinaryLoadFromData("x", 1, NULL, &bin), ACL_ERROR_API_NOT_SUPPORT,
              "aclrtBinaryLoadFromData: not supported by pyaclnn");
    uint64_t share = 0;
    CHECK_ERR(aclrtMemExportToShareableHandle(NULL, ACL_MEM_HANDLE_TYPE_NONE, 0, &share), ACL_ERROR_API_NOT_SUPPORT,
              "aclrtMemExportToShareableHandle");
    CHECK_ERR(aclmdlInitDump(), ACL_ERROR_API_NOT_SUPPORT, "aclmdlInitDump: not supported");
    CHECK_ERR(rtKernelLaunch(NULL, 1, NULL, 0, NULL, NULL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "rtKernelLaunch");
    CHECK_EQ(MsprofReportApi(0, NULL), -1);
    CHECK(strstr(aclGetRecentErrMsg(), "MsprofReportApi") != NULL);
    CHECK(MsprofGetHashId("abc", 3) == MsprofGetHashId("abc", 3));
    CHECK(MsprofGetHashId("abc", 3) != MsprofGetHashId("abd", 3));
    const uint64_t t0 = MsprofSysCycleTime();
    CHECK(MsprofSysCycleTime() >= t0);

    /* implemented */
    int32_t pid = 0;
    CHECK_OK(aclrtDeviceGetBareTgid(&pid));
    CHECK(pid > 0);
    aclrtFloatOverflowMode mode;
    CHECK_OK(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN));
    CHECK_OK(aclrtGetDeviceSatMode(&mode));
    CHECK_EQ(mode, ACL_RT_OVERFLOW_MODE_INFNAN);
    CHECK_ERR(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION), ACL_ERROR_FEATURE_UNSUPPORTED, "IEEE");
    CHECK_ERR(aclrtSetDeviceSatMode((aclrtFloatOverflowMode)7), ACL_ERROR_INVALID_PARAM, "mode must be");
    char ver[ACL_PKG_VERSION_MAX_SIZE];
    aclCANNPackageVersion v;
    CHECK_OK(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &v));
    CHECK_OK(aclsysGetVersionStr("CANN", ver));
    CHECK(strcmp(ver, v.version) == 0);
    CHECK_OK(aclsysGetVersionStr("opbase", ver));
    CHECK_ERR(aclsysGetVersionStr("nonesuch", ver), ACL_ERROR_INVALID_FILE, "no CANN package named");
    int32_t attr = -1;
    CHECK_OK(aclGetCannAttribute(ACL_CANN_ATTR_INF_NAN, &attr));
    CHECK_EQ(attr, 1);
    CHECK_OK(aclGetCannAttribute(ACL_CANN_ATTR_JIT_COMPILE, &attr));
    CHECK_EQ(attr, 0);
    const aclCannAttr *list = NULL;
    size_t n = 0;
    CHECK_OK(aclGetCannAttributeList(&list, &n));
    CHECK(n == 3 && list != NULL);
}

static void test_compile_options(void) {
    const size_t size = aclGetCompileoptSize(ACL_OP_JIT_COMPILE);
    CHECK(size > 8);
    char buf[8192];
    CHECK_OK(aclGetCompileopt(ACL_OP_JIT_COMPILE, buf, size));
    CHECK(strcmp(buf, "disable") == 0);
    CHECK_OK(aclSetCompileopt(ACL_PRECISION_MODE, "must_keep_origin_dtype"));
    CHECK_OK(aclGetCompileopt(ACL_PRECISION_MODE, buf, sizeof buf));
    CHECK(strcmp(buf, "must_keep_origin_dtype") == 0);
    CHECK_ERR(aclGetCompileopt(ACL_PRECISION_MODE, buf, 5), ACL_ERROR_INVALID_PARAM, "too small");
    CHECK_ERR(aclSetCompileopt(ACL_OP_JIT_COMPILE, "maybe"), ACL_ERROR_INVALID_PARAM, "enable");
    CHECK_ERR(aclSetCompileopt((aclCompileOpt)99, "x"), ACL_ERROR_INVALID_PARAM, "aclCompileOpt");
    CHECK_EQ(aclGetCompileoptSize((aclCompileOpt)-1), 0);
    CHECK_OK(aclopSetCompileFlag(ACL_OP_COMPILE_FUZZ));
    CHECK_OK(aclopSetCompileFlag(ACL_OP_COMPILE_DEFAULT));
}

/* ---- single-op API ---- */

static void *dev(size_t bytes) {
    void *p = NULL;
    CHECK_OK(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    return p;
}

static aclTensor *nd_tensor(const int64_t *dims, int n, aclDataType dt, void *data) {
    int64_t numel = 1;
    for (int i = 0; i < n; i++) numel *= dims[i];
    aclTensor *t = aclCreateTensor(dims, (uint64_t)n, dt, NULL, 0, ACL_FORMAT_ND, &numel, 1, data);
    CHECK(t != NULL);
    return t;
}

static void test_aclop_softmax_triu(aclrtStream stream) {
    const int64_t dims[4] = {2, 3, 12, 20}, mdims[4] = {2, 1, 12, 20};
    const size_t n = 2 * 3 * 12 * 20, nm = 2 * 12 * 20;
    float xh[2 * 3 * 12 * 20];
    uint8_t mh[2 * 12 * 20], triu[2 * 12 * 20];
    for (size_t i = 0; i < n; i++) xh[i] = (float)((int)(i * 7919 % 97) - 48) / 16.0f;
    for (size_t i = 0; i < nm; i++) {
        mh[i] = (uint8_t)(i % 3 == 0); /* ignored: fixed_triu_mask */
        const size_t r = i / 20 % 12, c = i % 20;
        triu[i] = c > r;
    }
    float *x = dev(n * 4), *y = dev(n * 4), *y2 = dev(n * 4);
    uint8_t *m = dev(nm), *mt = dev(nm);
    CHECK_OK(aclrtMemcpy(x, n * 4, xh, n * 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(m, nm, mh, nm, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(mt, nm, triu, nm, ACL_MEMCPY_HOST_TO_DEVICE));

    aclTensorDesc *in[2] = {aclCreateTensorDesc(ACL_FLOAT, 4, dims, ACL_FORMAT_NCHW),
                            aclCreateTensorDesc(ACL_BOOL, 4, mdims, ACL_FORMAT_NCHW)};
    aclTensorDesc *out[1] = {aclCreateTensorDesc(ACL_FLOAT, 4, dims, ACL_FORMAT_NCHW)};
    aclDataBuffer *ib[2] = {aclCreateDataBuffer(x, n * 4), aclCreateDataBuffer(m, nm)};
    aclDataBuffer *ob[1] = {aclCreateDataBuffer(y, n * 4)};
    aclopAttr *attr = aclopCreateAttr();
    CHECK(attr != NULL);
    CHECK_OK(aclopSetAttrFloat(attr, "scale", 0.5f));
    CHECK_OK(aclopSetAttrBool(attr, "fixed_triu_mask", 1));
    CHECK_OK(aclopCompileAndExecuteV2("ScaledMaskedSoftmax", 2, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS,
                                      ACL_COMPILE_SYS, NULL, stream));
    /* the aclnn op on the triu mask itself */
    aclTensor *tx = nd_tensor(dims, 4, ACL_FLOAT, x), *tm = nd_tensor(mdims, 4, ACL_BOOL, mt),
              *ty = nd_tensor(dims, 4, ACL_FLOAT, y2);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_OK(aclnnScaledMaskedSoftmaxGetWorkspaceSize(tx, tm, 0.5, false, ty, &ws, &ex));
    CHECK_OK(aclnnScaledMaskedSoftmax(NULL, 0, ex, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    static float a[2 * 3 * 12 * 20], b[2 * 3 * 12 * 20];
    CHECK_OK(aclrtMemcpy(a, n * 4, y, n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy(b, n * 4, y2, n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(a, b, n * 4) == 0);
    CHECK(a[1] == 0.0f && a[0] == 1.0f); /* row 0 sees only column 0 */

    /* an op type pyaclnn does not run, and the attribute checks */
    CHECK_ERR(aclopCompileAndExecuteV2("Conv2D", 2, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                       stream),
              ACL_ERROR_OP_NOT_FOUND, "op type Conv2D is not supported by pyaclnn");
    CHECK_OK(aclopSetAttrString(attr, "fixed_triu_mask", "yes"));
    CHECK_ERR(aclopCompileAndExecuteV2("ScaledMaskedSoftmax", 2, in, ib, 1, out, ob, attr, ACL_ENGINE_SYS,
                                       ACL_COMPILE_SYS, NULL, stream),
              ACL_ERROR_OP_ATTR_NOT_MATCH, "fixed_triu_mask must be a bool, got a string");
    aclopDestroyAttr(attr);
    aclopDestroyAttr(attr); /* twice: an error message, no crash */
    CHECK(strstr(aclGetRecentErrMsg(), "already destroyed") != NULL);

    aclDestroyTensor(tx), aclDestroyTensor(tm), aclDestroyTensor(ty);
    for (int i = 0; i < 2; i++) aclDestroyTensorDesc(in[i]), aclDestroyDataBuffer(ib[i]);
    aclDestroyTensorDesc(out[0]), aclDestroyDataBuffer(ob[0]);
    aclrtFree(x), aclrtFree(y), aclrtFree(y2), aclrtFree(m), aclrtFree(mt);
}

static void test_aclop_fill(aclrtStream stream) {
    /* Fill: host int64 dims [2, 3] and a host fp32 value -> fp16 y; then a dims y does not match */
    const int64_t one = 2, ydims[2] = {2, 3};
    int64_t dims[2] = {2, 3};
    float value = 2.5f;
    uint16_t *y = dev(6 * 2), yh[6];
    aclTensorDesc *in[2] = {aclCreateTensorDesc(ACL_INT64, 1, &one, ACL_FORMAT_ND),
                            aclCreateTensorDesc(ACL_FLOAT, 0, NULL, ACL_FORMAT_ND)};
    CHECK_OK(aclSetTensorPlaceMent(in[0], ACL_MEMTYPE_HOST));
    CHECK_OK(aclSetTensorPlaceMent(in[1], ACL_MEMTYPE_HOST));
    aclTensorDesc *out[1] = {aclCreateTensorDesc(ACL_FLOAT16, 2, ydims, ACL_FORMAT_ND)};
    aclDataBuffer *ib[2] = {aclCreateDataBuffer(dims, sizeof dims), aclCreateDataBuffer(&value, sizeof value)};
    aclDataBuffer *ob[1] = {aclCreateDataBuffer(y, 6 * 2)};
    CHECK_OK(aclopCompileAndExecuteV2("Fill", 2, in, ib, 1, out, ob, NULL, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                    stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpy(yh, sizeof yh, y, sizeof yh, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 6; i++) CHECK(aclFloat16ToFloat(yh[i]) == 2.5f);
    dims[1] = 4; /* now dims says [2, 4] and y is [2, 3] */
    CHECK_ERR(aclopCompileAndExecuteV2("Fill", 2, in, ib, 1, out, ob, NULL, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                     stream),
              ACL_ERROR_OP_OUTPUT_NOT_MATCH, "op Fill: y shape [2,3] must equal dims");
    for (int i = 0; i < 2; i++) aclDestroyTensorDesc(in[i]), aclDestroyDataBuffer(ib[i]);
    aclDestroyTensorDesc(out[0]), aclDestroyDataBuffer(ob[0]);
    aclrtFree(y);
}

static void test_aclop_nz_round_trip(aclrtStream stream) {
    /* fp16 [2, 19, 21] -> FRACTAL_NZ storage [2, 2, 2, 16, 16] -> ND, and Cast */
    const int64_t dims[3] = {2, 19, 21}, nz[5] = {2, 2, 2, 16, 16};
    const size_t n = 2 * 19 * 21, nn = 2 * 2 * 2 * 16 * 16;
    uint16_t h[2 * 19 * 21];
    for (size_t i = 0; i < n; i++) h[i] = aclFloatToFloat16((float)i);
    uint16_t *x = dev(n * 2), *z = dev(nn * 2), *back = dev(n * 2);
    float *f = dev(n * 4);
    CHECK_OK(aclrtMemcpy(x, n * 2, h, n * 2, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_OK(aclrtMemset(z, nn * 2, 0x7f, nn * 2)); /* the padding must be written as zeros */
    aclTensorDesc *dnd = aclCreateTensorDesc(ACL_FLOAT16, 3, dims, ACL_FORMAT_ND);
    aclTensorDesc *dnz = aclCreateTensorDesc(ACL_FLOAT16, 3, dims, ACL_FORMAT_ND);
    aclTensorDesc *df = aclCreateTensorDesc(ACL_FLOAT, 3, dims, ACL_FORMAT_ND);
    CHECK_OK(aclSetTensorFormat(dnz, ACL_FORMAT_FRACTAL_NZ));
    CHECK_OK(aclSetTensorShape(dnz, 5, nz));
    aclDataBuffer *bx = aclCreateDataBuffer(x, n * 2), *bz = aclCreateDataBuffer(z, nn * 2),
                  *bb = aclCreateDataBuffer(back, n * 2), *bf = aclCreateDataBuffer(f, n * 4);
    CHECK_OK(aclopCompileAndExecute("Identity", 1, (const aclTensorDesc *const[]){dnd},
                                    (const aclDataBuffer *const[]){bx}, 1, (const aclTensorDesc *const[]){dnz},
                                    (aclDataBuffer *const[]){bz}, NULL, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                    stream));
    CHECK_OK(aclopCompileAndExecute("Identity", 1, (const aclTensorDesc *const[]){dnz},
                                    (const aclDataBuffer *const[]){bz}, 1, (const aclTensorDesc *const[]){dnd},
                                    (aclDataBuffer *const[]){bb}, NULL, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                    stream));
    CHECK_OK(aclopCompileAndExecute("Cast", 1, (const aclTensorDesc *const[]){dnz},
                                    (const aclDataBuffer *const[]){bz}, 1, (const aclTensorDesc *const[]){df},
                                    (aclDataBuffer *const[]){bf}, NULL, ACL_ENGINE_SYS, ACL_COMPILE_SYS, NULL,
                                    stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    static uint16_t zh[2 * 2 * 2 * 16 * 16], bh[2 * 19 * 21];
    static float fh[2 * 19 * 21];
    CHECK_OK(aclrtMemcpy(zh, nn * 2, z, nn * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy(bh, n * 2, back, n * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy(fh, n * 4, f, n * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(memcmp(bh, h, n * 2) == 0);
    /* element (b, r, c) at ((b*W1 + c/16) * 32 + r) * 16 + c%16; (1, 18, 20): */
    CHECK_EQ(zh[((1 * 2 + 1) * 32 + 18) * 16 + 4], h[(1 * 19 + 18) * 21 + 20]);
    CHECK_EQ(zh[((0 * 2 + 1) * 32 + 0) * 16 + 5], 0);  /* column 21: padding */
    CHECK_EQ(zh[((0 * 2 + 0) * 32 + 19) * 16 + 0], 0); /* row 19: padding */
    for (size_t i = 0; i < n; i++) CHECK(fh[i] == aclFloat16ToFloat(h[i]));
    aclDestroyTensorDesc(dnd), aclDestroyTensorDesc(dnz), aclDestroyTensorDesc(df);
    aclDestroyDataBuffer(bx), aclDestroyDataBuffer(bz), aclDestroyDataBuffer(bb), aclDestroyDataBuffer(bf);
    aclrtFree(x), aclrtFree(z), aclrtFree(back), aclrtFree(f);
}

/* ---- plumbing ops ---- */

/* ws and ex are read after phase 1 ran (argument evaluation order is unspecified). */
static void run_op(aclnnStatus ws_rc, const uint64_t *ws, aclOpExecutor *const *ex,
                   aclnnStatus (*launch)(void *, uint64_t, aclOpExecutor *, aclrtStream), aclrtStream stream) {
    CHECK_OK(ws_rc);
    CHECK_EQ(*ws, 0);
    CHECK_OK(launch(NULL, 0, *ex, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
}

static void test_plumbing(aclrtStream stream) {
    /* src: a [3, 4] float view with strides (1, 3) of a 12-float buffer */
    float src_h[12];
    for (int i = 0; i < 12; i++) src_h[i] = (float)i + 0.25f;
    float *src = dev(48);
    uint16_t *dst = dev(24);
    float *acc = dev(48);
    CHECK_OK(aclrtMemcpy(src, 48, src_h, 48, ACL_MEMCPY_HOST_TO_DEVICE));
    const int64_t d34[2] = {3, 4}, st[2] = {1, 3}, storage = 12;
    aclTensor *ts = aclCreateTensor(d34, 2, ACL_FLOAT, st, 0, ACL_FORMAT_ND, &storage, 1, src);
    aclTensor *td = nd_tensor(d34, 2, ACL_FLOAT16, dst), *ta = nd_tensor(d34, 2, ACL_FLOAT, acc);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    run_op(aclnnInplaceCopyGetWorkspaceSize(td, ts, &ws, &ex), &ws, &ex, aclnnInplaceCopy, stream);
    uint16_t dh[12];
    CHECK_OK(aclrtMemcpy(dh, 24, dst, 24, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 4; c++) CHECK(aclFloat16ToFloat(dh[r * 4 + c]) == src_h[r + 3 * c]);
    }
    float one = 1.0f, two = 2.0f;
    aclScalar *s1 = aclCreateScalar(&one, ACL_FLOAT), *s2 = aclCreateScalar(&two, ACL_FLOAT);
    run_op(aclnnInplaceFillScalarGetWorkspaceSize(ta, s2, &ws, &ex), &ws, &ex, aclnnInplaceFillScalar, stream);
    run_op(aclnnInplaceAddGetWorkspaceSize(ta, ts, s2, &ws, &ex), &ws, &ex, aclnnInplaceAdd, stream); /* 2 + 2*src */
    float ah[12];
    CHECK_OK(aclrtMemcpy(ah, 48, acc, 48, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 4; c++) CHECK(ah[r * 4 + c] == 2.0f + 2.0f * src_h[r + 3 * c]);
    }
    float *sum = dev(16);
    const int64_t d4[1] = {4}, red[1] = {0};
    aclTensor *tsum = nd_tensor(d4, 1, ACL_FLOAT, sum);
    aclIntArray *dims = aclCreateIntArray(red, 1);
    run_op(aclnnReduceSumGetWorkspaceSize(ta, dims, false, ACL_FLOAT, tsum, &ws, &ex), &ws, &ex, aclnnReduceSum, stream);
    float sh[4];
    CHECK_OK(aclrtMemcpy(sh, 16, sum, 16, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int c = 0; c < 4; c++) CHECK(sh[c] == ah[c] + ah[4 + c] + ah[8 + c]);
    CHECK_ERR(aclnnInplaceAddGetWorkspaceSize(ta, tsum, NULL, &ws, &ex), ACLNN_ERR_PARAM_NULLPTR, "alpha");
    aclDestroyScalar(s1), aclDestroyScalar(s2), aclDestroyIntArray(dims);
    aclDestroyTensor(ts), aclDestroyTensor(td), aclDestroyTensor(ta), aclDestroyTensor(tsum);
    aclrtFree(src), aclrtFree(dst), aclrtFree(acc), aclrtFree(sum);
}

int main(void) {
    CHECK_OK(aclInit(NULL));
    CHECK_OK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK_OK(aclrtCreateStream(&stream));
    test_stand_ins();
    test_compile_options();
    test_aclop_softmax_triu(stream);
    test_aclop_nz_round_trip(stream);
    test_aclop_fill(stream);
    test_plumbing(stream);
    CHECK_OK(aclrtDestroyStream(stream));
    CHECK_OK(aclrtResetDevice(0));
    CHECK_OK(aclFinalize());
    printf("test_compat: %d checks passed\n", (int)g_checks);
    return 0;
}
