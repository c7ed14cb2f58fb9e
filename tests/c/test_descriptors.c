/* aclDataBuffer and aclTensorDesc: round trips, the documented NULL results
 * and every error path. Plain C; exits 1 on the first failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"

#include "pa_check.h"

/* The deprecated getters are part of the API under test. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void test_data_buffer(void) {
    char mem[64];
    aclDataBuffer *b = aclCreateDataBuffer(mem, sizeof mem);
    CHECK(b != NULL);
    CHECK(aclGetDataBufferAddr(b) == mem);
    CHECK_EQ(aclGetDataBufferSizeV2(b), 64);
    CHECK_EQ(aclGetDataBufferSize(b), 64);
    CHECK_OK(aclUpdateDataBuffer(b, mem + 8, (size_t)1 << 33));
    CHECK(aclGetDataBufferAddr(b) == mem + 8);
    CHECK_EQ(aclGetDataBufferSizeV2(b), (size_t)1 << 33);
    CHECK_EQ(aclGetDataBufferSize(b), UINT32_MAX); /* saturates */
    CHECK_OK(aclDestroyDataBuffer(b));
    aclDataBuffer *empty = aclCreateDataBuffer(NULL, 0); /* an empty output is allowed */
    CHECK(empty != NULL && aclGetDataBufferAddr(empty) == NULL && aclGetDataBufferSizeV2(empty) == 0);
    CHECK_OK(aclDestroyDataBuffer(empty));
    CHECK(aclGetDataBufferAddr(NULL) == NULL);
    CHECK_EQ(aclGetDataBufferSizeV2(NULL), 0);
    CHECK_EQ(aclGetDataBufferSize(NULL), 0);
    CHECK_ERR(aclDestroyDataBuffer(NULL), ACL_ERROR_INVALID_PARAM, "dataBuffer must not be NULL");
    CHECK_ERR(aclUpdateDataBuffer(NULL, mem, 1), ACL_ERROR_INVALID_PARAM, "dataBuffer must not be NULL");
}

static void test_tensor_desc(void) {
    const int64_t dims[3] = {2, 3, 5};
    aclTensorDesc *d = aclCreateTensorDesc(ACL_FLOAT16, 3, dims, ACL_FORMAT_ND);
    CHECK(d != NULL);
    CHECK_EQ(aclGetTensorDescType(d), ACL_FLOAT16);
    CHECK_EQ(aclGetTensorDescFormat(d), ACL_FORMAT_ND);
    CHECK_EQ(aclGetTensorDescNumDims(d), 3);
    CHECK_EQ(aclGetTensorDescElementCount(d), 30);
    CHECK_EQ(aclGetTensorDescSize(d), 60);
    int64_t v = 0;
    CHECK_OK(aclGetTensorDescDimV2(d, 2, &v));
    CHECK_EQ(v, 5);
    CHECK_EQ(aclGetTensorDescDim(d, 1), 3);
    CHECK_EQ(aclGetTensorDescDim(d, 3), -1);
    CHECK_ERR(aclGetTensorDescDimV2(d, 3, &v), ACL_ERROR_INVALID_PARAM, "index must be < numDims (3)");
    CHECK_ERR(aclGetTensorDescDimV2(d, 0, NULL), ACL_ERROR_INVALID_PARAM, "dimSize must not be NULL");
    CHECK_ERR(aclGetTensorDescDimV2(NULL, 0, &v), ACL_ERROR_INVALID_PARAM, "desc must not be NULL");

    /* ranges */
    int64_t range[2] = {0, 0};
    CHECK_OK(aclGetTensorDescDimRange(d, 1, 2, range));
    CHECK(range[0] == 3 && range[1] == 3);
    int64_t shape_range[3][ACL_TENSOR_SHAPE_RANGE_NUM] = {{1, 4}, {3, 3}, {1, -1}};
    CHECK_OK(aclSetTensorShapeRange(d, 3, shape_range));
    CHECK_OK(aclGetTensorDescDimRange(d, 2, 2, range));
    CHECK(range[0] == 1 && range[1] == -1);
    CHECK_ERR(aclGetTensorDescDimRange(d, 0, 1, range), ACL_ERROR_INVALID_PARAM, "dimRangeNum must be >= 2");
    CHECK_ERR(aclGetTensorDescDimRange(d, 5, 2, range), ACL_ERROR_INVALID_PARAM, "index must be < numDims");
    CHECK_ERR(aclGetTensorDescDimRange(d, 0, 2, NULL), ACL_ERROR_INVALID_PARAM, "dimRange must not be NULL");
    int64_t bad_range[1][ACL_TENSOR_SHAPE_RANGE_NUM] = {{5, 2}};
    CHECK_ERR(aclSetTensorShapeRange(d, 1, bad_range), ACL_ERROR_INVALID_PARAM, "dimsRange[0]");
    CHECK_ERR(aclSetTensorShapeRange(d, 1, NULL), ACL_ERROR_INVALID_PARAM, "must not be NULL");
    CHECK_ERR(aclSetTensorShapeRange(NULL, 0, NULL), ACL_ERROR_INVALID_PARAM, "desc must not be NULL");
    int64_t value_range[1][ACL_TENSOR_VALUE_RANGE_NUM] = {{-7, 7}};
    CHECK_OK(aclSetTensorValueRange(d, 1, value_range));
    CHECK_ERR(aclSetTensorValueRange(d, 2, NULL), ACL_ERROR_INVALID_PARAM, "must not be NULL");

    /* name, format, shape, const, placement */
    CHECK(strcmp(aclGetTensorDescName(d), "") == 0);
    aclSetTensorDescName(d, "x0");
    CHECK(strcmp(aclGetTensorDescName(d), "x0") == 0);
    aclSetTensorDescName(d, NULL);
    CHECK(strcmp(aclGetTensorDescName(d), "") == 0);
    CHECK_OK(aclSetTensorFormat(d, ACL_FORMAT_NCHW));
    CHECK_EQ(aclGetTensorDescFormat(d), ACL_FORMAT_NCHW);
    CHECK_OK(aclSetTensorStorageFormat(d, ACL_FORMAT_NHWC));
    CHECK_EQ(aclGetTensorDescFormat(d), ACL_FORMAT_NHWC);
    CHECK_ERR(aclSetTensorFormat(d, (aclFormat)5), ACL_ERROR_INVALID_PARAM, "is not an aclFormat");
    CHECK_OK(aclSetTensorOriginFormat(d, ACL_FORMAT_NCHW));
    const int64_t dims2[2] = {4, 8};
    CHECK_OK(aclSetTensorShape(d, 2, dims2));
    CHECK_EQ(aclGetTensorDescNumDims(d), 2);
    CHECK_EQ(aclGetTensorDescSize(d), 64);
    CHECK_OK(aclSetTensorStorageShape(d, 1, dims2));
    CHECK_EQ(aclGetTensorDescElementCount(d), 4);
    CHECK_OK(aclSetTensorOriginShape(d, 2, dims2));
    CHECK_ERR(aclSetTensorShape(d, -1, dims2), ACL_ERROR_INVALID_PARAM, "numDims must be >= 0");
    CHECK_ERR(aclSetTensorShape(d, 2, NULL), ACL_ERROR_INVALID_PARAM, "dims must not be NULL");
    const int64_t bad_dims[2] = {3, -4};
    CHECK_ERR(aclSetTensorShape(d, 2, bad_dims), ACL_ERROR_INVALID_PARAM, "dims[1]");
    float cst[4] = {1, 2, 3, 4};
    CHECK_OK(aclSetTensorConst(d, cst, sizeof cst));
    CHECK_ERR(aclSetTensorConst(d, NULL, 4), ACL_ERROR_INVALID_PARAM, "dataBuffer must not be NULL");
    CHECK_ERR(aclSetTensorConst(d, cst, 0), ACL_ERROR_INVALID_PARAM, "length must be > 0");
    CHECK_OK(aclSetTensorPlaceMent(d, ACL_MEMTYPE_HOST));
    CHECK_ERR(aclSetTensorPlaceMent(d, (aclMemType)3), ACL_ERROR_INVALID_PARAM, "memType");
    CHECK_OK(aclSetTensorDynamicInput(d, "x"));
    CHECK_ERR(aclSetTensorDynamicInput(d, NULL), ACL_ERROR_INVALID_PARAM, "dynamicInputName");
    CHECK(aclGetTensorDescByIndex(d, 0) == d);
    CHECK(aclGetTensorDescByIndex(d, 1) == NULL);
    CHECK(aclGetTensorDescAddress(d) == NULL);

    /* format translation: identity only */
    aclTensorDesc *t = NULL;
    CHECK_OK(aclTransTensorDescFormat(d, ACL_FORMAT_NHWC, &t));
    CHECK(t != NULL && t != d && aclGetTensorDescElementCount(t) == 4);
    CHECK_ERR(aclTransTensorDescFormat(d, ACL_FORMAT_NC1HWC0, &t), ACL_ERROR_API_NOT_SUPPORT, "not emulated");
    CHECK_ERR(aclTransTensorDescFormat(NULL, ACL_FORMAT_ND, &t), ACL_ERROR_INVALID_PARAM, "must not be NULL");
    aclDestroyTensorDesc(t);
    aclDestroyTensorDesc(d);

    /* scalars, unknown dims and unknown rank */
    aclTensorDesc *s = aclCreateTensorDesc(ACL_INT32, 0, NULL, ACL_FORMAT_ND);
    CHECK(s != NULL && aclGetTensorDescNumDims(s) == 0 && aclGetTensorDescElementCount(s) == 1 &&
          aclGetTensorDescSize(s) == 4);
    aclDestroyTensorDesc(s);
    const int64_t dyn[2] = {-1, 16};
    aclTensorDesc *u = aclCreateTensorDesc(ACL_FLOAT, 2, dyn, ACL_FORMAT_ND);
    CHECK(u != NULL && aclGetTensorDescElementCount(u) == 0 && aclGetTensorDescSize(u) == 0);
    aclDestroyTensorDesc(u);
    const int64_t unk[1] = {-2};
    aclTensorDesc *r = aclCreateTensorDesc(ACL_FLOAT, 1, unk, ACL_FORMAT_ND);
    CHECK(r != NULL && aclGetTensorDescNumDims(r) == (size_t)ACL_UNKNOWN_RANK);
    aclDestroyTensorDesc(r);

    /* invalid creation returns NULL with a message */
    CHECK(aclCreateTensorDesc(ACL_FLOAT, -1, dims, ACL_FORMAT_ND) == NULL);
    CHECK(strstr(aclGetRecentErrMsg(), "numDims must be >= 0") != NULL);
    CHECK(aclCreateTensorDesc(ACL_FLOAT, 2, NULL, ACL_FORMAT_ND) == NULL);
    CHECK(aclCreateTensorDesc(ACL_FLOAT, 2, dims, (aclFormat)7) == NULL);
    const int64_t bad_rank[2] = {-2, 3}; /* -2 only alone */
    CHECK(aclCreateTensorDesc(ACL_FLOAT, 2, bad_rank, ACL_FORMAT_ND) == NULL);
    CHECK(strstr(aclGetRecentErrMsg(), "lone -2") != NULL);

    /* NULL descriptions */
    CHECK_EQ(aclGetTensorDescType(NULL), ACL_DT_UNDEFINED);
    CHECK_EQ(aclGetTensorDescFormat(NULL), ACL_FORMAT_UNDEFINED);
    CHECK_EQ(aclGetTensorDescSize(NULL), 0);
    CHECK_EQ(aclGetTensorDescElementCount(NULL), 0);
    CHECK_EQ(aclGetTensorDescNumDims(NULL), 0);
    CHECK(strcmp(aclGetTensorDescName(NULL), "") == 0);
    aclDestroyTensorDesc(NULL);
    aclSetTensorDescName(NULL, "x");
}

int main(void) {
    test_data_buffer();
    test_tensor_desc();
    printf("test_descriptors: %d checks passed\n", g_checks);
    return 0;
}
