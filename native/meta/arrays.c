/* aclScalar, aclIntArray / aclFloatArray / aclBoolArray, aclTensorList / aclScalarList.
 * Creation copies the caller's data; lists own their elements. */
#include "meta/pa_tensor.h"

#include <stdlib.h>
#include <string.h>

#include "common/pa_half.h"

/* ---- scalar ---- */

PA_API aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    if (value == NULL) {
        pa_set_errmsg("aclCreateScalar: value is NULL");
        return NULL;
    }
    aclScalar s;
    memset(&s, 0, sizeof s);
    s.magic = PA_SCALAR_MAGIC;
    s.dtype = dataType;
    switch (dataType) {
    case ACL_FLOAT: { float v; memcpy(&v, value, sizeof v); s.v.f = v; break; }
    case ACL_DOUBLE: { double v; memcpy(&v, value, sizeof v); s.v.f = v; break; }
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, value, sizeof h); s.v.f = pa_f16_to_f32(h); break; }
    case ACL_BF16: { uint16_t h; memcpy(&h, value, sizeof h); s.v.f = pa_bf16_to_f32(h); break; }
    case ACL_INT8: { int8_t v; memcpy(&v, value, sizeof v); s.v.i = v; break; }
    case ACL_INT16: { int16_t v; memcpy(&v, value, sizeof v); s.v.i = v; break; }
    case ACL_INT32: { int32_t v; memcpy(&v, value, sizeof v); s.v.i = v; break; }
    case ACL_INT64: { int64_t v; memcpy(&v, value, sizeof v); s.v.i = v; break; }
    case ACL_UINT8: { uint8_t v; memcpy(&v, value, sizeof v); s.v.u = v; break; }
    case ACL_UINT16: { uint16_t v; memcpy(&v, value, sizeof v); s.v.u = v; break; }
    case ACL_UINT32: { uint32_t v; memcpy(&v, value, sizeof v); s.v.u = v; break; }
    case ACL_UINT64: { uint64_t v; memcpy(&v, value, sizeof v); s.v.u = v; break; }
    case ACL_BOOL: { uint8_t v; memcpy(&v, value, sizeof v); s.v.b = v != 0; break; }
    case ACL_COMPLEX32: memcpy(s.v.raw, value, 4); break;
    case ACL_COMPLEX64: memcpy(s.v.raw, value, 8); break;
    case ACL_COMPLEX128: memcpy(s.v.raw, value, 16); break;
    default:
        pa_set_errmsg("aclCreateScalar: dataType %s (%d) is not supported for scalars", pa_dtype_name(dataType),
                      (int)dataType);
        return NULL;
    }
    aclScalar *p = malloc(sizeof *p);
    if (p == NULL) {
        pa_set_errmsg("aclCreateScalar: out of host memory");
        return NULL;
    }
    *p = s;
    return p;
}

PA_API aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    if (scalar == NULL) return ACLNN_SUCCESS;
    if (scalar->magic != PA_SCALAR_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar: not a live aclScalar (destroyed twice?)");
    }
    aclScalar *s = (aclScalar *)scalar;
    s->magic = 0;
    free(s);
    return ACLNN_SUCCESS;
}

/* ---- value arrays ---- */

/* malloc(n * elem) with at least one element, NULL on overflow / OOM. */
static void *alloc_array(uint64_t n, size_t elem) {
    if (n > SIZE_MAX / elem) return NULL;
    return malloc((size_t)(n > 0 ? n : 1) * elem);
}

PA_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateIntArray: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    aclIntArray *a = malloc(sizeof *a);
    int64_t *v = alloc_array(size, sizeof(int64_t));
    if (a == NULL || v == NULL) {
        free(a);
        free(v);
        pa_set_errmsg("aclCreateIntArray: out of host memory for %llu values", (unsigned long long)size);
        return NULL;
    }
    if (size > 0) memcpy(v, value, (size_t)size * sizeof(int64_t));
    a->magic = PA_INT_ARRAY_MAGIC;
    a->size = size;
    a->values = v;
    return a;
}

PA_API aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateFloatArray: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    aclFloatArray *a = malloc(sizeof *a);
    float *v = alloc_array(size, sizeof(float));
    if (a == NULL || v == NULL) {
        free(a);
        free(v);
        pa_set_errmsg("aclCreateFloatArray: out of host memory for %llu values", (unsigned long long)size);
        return NULL;
    }
    if (size > 0) memcpy(v, value, (size_t)size * sizeof(float));
    a->magic = PA_FLOAT_ARRAY_MAGIC;
    a->size = size;
    a->values = v;
    return a;
}

PA_API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateBoolArray: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    aclBoolArray *a = malloc(sizeof *a);
    bool *v = alloc_array(size, sizeof(bool));
    if (a == NULL || v == NULL) {
        free(a);
        free(v);
        pa_set_errmsg("aclCreateBoolArray: out of host memory for %llu values", (unsigned long long)size);
        return NULL;
    }
    /* read the bytes (any nonzero byte is true), so a stray value is not read as bool */
    const unsigned char *src = (const unsigned char *)value;
    for (uint64_t i = 0; i < size; i++) v[i] = src[i * sizeof(bool)] != 0;
    a->magic = PA_BOOL_ARRAY_MAGIC;
    a->size = size;
    a->values = v;
    return a;
}

PA_API aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != PA_INT_ARRAY_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyIntArray: not a live aclIntArray (destroyed twice?)");
    }
    aclIntArray *a = (aclIntArray *)array;
    a->magic = 0;
    free(a->values);
    free(a);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyFloatArray(const aclFloatArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != PA_FLOAT_ARRAY_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyFloatArray: not a live aclFloatArray (destroyed twice?)");
    }
    aclFloatArray *a = (aclFloatArray *)array;
    a->magic = 0;
    free(a->values);
    free(a);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != PA_BOOL_ARRAY_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyBoolArray: not a live aclBoolArray (destroyed twice?)");
    }
    aclBoolArray *a = (aclBoolArray *)array;
    a->magic = 0;
    free(a->values);
    free(a);
    return ACLNN_SUCCESS;
}

/* ---- lists (own their elements) ---- */

PA_API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateTensorList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    aclTensorList *l = malloc(sizeof *l);
    aclTensor **v = alloc_array(size, sizeof(aclTensor *));
    if (l == NULL || v == NULL) {
        free(l);
        free(v);
        pa_set_errmsg("aclCreateTensorList: out of host memory for %llu tensors", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) v[i] = (aclTensor *)value[i];
    l->magic = PA_TENSOR_LIST_MAGIC;
    l->size = size;
    l->tensors = v;
    return l;
}

PA_API aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateScalarList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    aclScalarList *l = malloc(sizeof *l);
    aclScalar **v = alloc_array(size, sizeof(aclScalar *));
    if (l == NULL || v == NULL) {
        free(l);
        free(v);
        pa_set_errmsg("aclCreateScalarList: out of host memory for %llu scalars", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) v[i] = (aclScalar *)value[i];
    l->magic = PA_SCALAR_LIST_MAGIC;
    l->size = size;
    l->scalars = v;
    return l;
}

PA_API aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != PA_TENSOR_LIST_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList: not a live aclTensorList (destroyed twice?)");
    }
    aclTensorList *l = (aclTensorList *)array;
    l->magic = 0;
    for (uint64_t i = 0; i < l->size; i++) {
        bool seen = false; /* a tensor listed twice is destroyed once */
        for (uint64_t j = 0; j < i && !seen; j++) seen = l->tensors[j] == l->tensors[i];
        if (!seen) aclDestroyTensor(l->tensors[i]);
    }
    free(l->tensors);
    free(l);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyScalarList(const aclScalarList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    if (array->magic != PA_SCALAR_LIST_MAGIC) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalarList: not a live aclScalarList (destroyed twice?)");
    }
    aclScalarList *l = (aclScalarList *)array;
    l->magic = 0;
    for (uint64_t i = 0; i < l->size; i++) {
        bool seen = false; /* a scalar listed twice is destroyed once */
        for (uint64_t j = 0; j < i && !seen; j++) seen = l->scalars[j] == l->scalars[i];
        if (!seen) aclDestroyScalar(l->scalars[i]);
    }
    free(l->scalars);
    free(l);
    return ACLNN_SUCCESS;
}

/* ---- sizes ---- */

#define PA_GET_SIZE(FN, TYPE, MAGIC, WHAT)                                                            \
    PA_API aclnnStatus FN(const TYPE *array, uint64_t *size) {                                       \
        if (array == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, #FN ": " WHAT " is NULL");          \
        if (size == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, #FN ": size is NULL");             \
        if (array->magic != (MAGIC)) {                                                               \
            return pa_fail(ACLNN_ERR_PARAM_INVALID, #FN ": " WHAT " is not a live " #TYPE);           \
        }                                                                                            \
        *size = array->size;                                                                         \
        return ACLNN_SUCCESS;                                                                        \
    }

PA_GET_SIZE(aclGetIntArraySize, aclIntArray, PA_INT_ARRAY_MAGIC, "array")
PA_GET_SIZE(aclGetFloatArraySize, aclFloatArray, PA_FLOAT_ARRAY_MAGIC, "array")
PA_GET_SIZE(aclGetBoolArraySize, aclBoolArray, PA_BOOL_ARRAY_MAGIC, "array")
PA_GET_SIZE(aclGetTensorListSize, aclTensorList, PA_TENSOR_LIST_MAGIC, "tensorList")
PA_GET_SIZE(aclGetScalarListSize, aclScalarList, PA_SCALAR_LIST_MAGIC, "scalarList")
