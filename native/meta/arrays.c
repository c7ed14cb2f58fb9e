/* aclScalar, aclIntArray / aclFloatArray / aclBoolArray, aclTensorList / aclScalarList.
 * Creation copies the caller's data; lists own their elements. */
#include "meta/pa_tensor.h"

#include <stdio.h>
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
    if (!pa_handle_register(p, PA_HANDLE_SCALAR)) {
        free(p);
        pa_set_errmsg("aclCreateScalar: out of host memory for the handle registry");
        return NULL;
    }
    return p;
}

PA_API aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    if (scalar == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyScalar", "scalar", scalar, PA_HANDLE_SCALAR);
    if (rc != 0) return rc;
    pa_handle_retire((aclScalar *)scalar, PA_HANDLE_SCALAR);
    return ACLNN_SUCCESS;
}

/* ---- value arrays ---- */

/* Enters a new handle h (whose owned buffer is owned) in the registry; on
 * failure frees both and returns NULL with a message naming api. */
static void *register_or_free(void *h, void *owned, pa_handle_kind kind, const char *api) {
    if (pa_handle_register(h, kind)) return h;
    free(owned);
    free(h);
    pa_set_errmsg("%s: out of host memory for the handle registry", api);
    return NULL;
}

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
    a->size = size;
    a->values = v;
    return register_or_free(a, v, PA_HANDLE_INT_ARRAY, "aclCreateIntArray");
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
    a->size = size;
    a->values = v;
    return register_or_free(a, v, PA_HANDLE_FLOAT_ARRAY, "aclCreateFloatArray");
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
    a->size = size;
    a->values = v;
    return register_or_free(a, v, PA_HANDLE_BOOL_ARRAY, "aclCreateBoolArray");
}

PA_API aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyIntArray", "array", array, PA_HANDLE_INT_ARRAY);
    if (rc != 0) return rc;
    aclIntArray *a = (aclIntArray *)array;
    free(a->values);
    pa_handle_retire(a, PA_HANDLE_INT_ARRAY);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyFloatArray(const aclFloatArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyFloatArray", "array", array, PA_HANDLE_FLOAT_ARRAY);
    if (rc != 0) return rc;
    aclFloatArray *a = (aclFloatArray *)array;
    free(a->values);
    pa_handle_retire(a, PA_HANDLE_FLOAT_ARRAY);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyBoolArray", "array", array, PA_HANDLE_BOOL_ARRAY);
    if (rc != 0) return rc;
    aclBoolArray *a = (aclBoolArray *)array;
    free(a->values);
    pa_handle_retire(a, PA_HANDLE_BOOL_ARRAY);
    return ACLNN_SUCCESS;
}

/* ---- lists (own their elements) ---- */

/* A list element at creation: NULL, or a live handle of `kind`. */
static bool element_ok(const char *api, uint64_t i, const void *e, pa_handle_kind kind) {
    if (e == NULL) return true;
    char param[40];
    snprintf(param, sizeof param, "value[%llu]", (unsigned long long)i);
    return pa_handle_check(api, param, e, kind) == ACLNN_SUCCESS;
}

PA_API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateTensorList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) {
        if (!element_ok("aclCreateTensorList", i, value[i], PA_HANDLE_TENSOR)) return NULL;
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
    l->size = size;
    l->tensors = v;
    return register_or_free(l, v, PA_HANDLE_TENSOR_LIST, "aclCreateTensorList");
}

PA_API aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
    if (value == NULL && size > 0) {
        pa_set_errmsg("aclCreateScalarList: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++) {
        if (!element_ok("aclCreateScalarList", i, value[i], PA_HANDLE_SCALAR)) return NULL;
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
    l->size = size;
    l->scalars = v;
    return register_or_free(l, v, PA_HANDLE_SCALAR_LIST, "aclCreateScalarList");
}

static const void *tensor_at(const void *list, uint64_t i) { return ((const aclTensorList *)list)->tensors[i]; }
static const void *scalar_at(const void *list, uint64_t i) { return ((const aclScalarList *)list)->scalars[i]; }

/* Destroys the elements of a list (at(list, i) is element i): each live one
 * once (an element listed twice is destroyed once). An element that is no
 * longer live (destroyed on its own, or by another list) is skipped: returns
 * 161002 naming the first one, after destroying the others. */
static int destroy_elements(const char *api, const char *name, const void *list, uint64_t size,
                            const void *(*at)(const void *, uint64_t), pa_handle_kind kind) {
    uint64_t bad = UINT64_MAX;
    for (uint64_t i = 0; i < size; i++) {
        const void *e = at(list, i);
        if (e == NULL) continue;
        if (pa_handle_live(e, kind) && pa_handle_take(api, name, e, kind) == ACLNN_SUCCESS) {
            pa_handle_retire((void *)e, kind);
            continue;
        }
        bool dup = false;
        for (uint64_t j = 0; j < i && !dup; j++) dup = at(list, j) == e;
        if (!dup && bad == UINT64_MAX) bad = i;
    }
    if (bad == UINT64_MAX) return ACLNN_SUCCESS;
    char param[64];
    snprintf(param, sizeof param, "%s element %llu", name, (unsigned long long)bad);
    int rc = pa_handle_check(api, param, at(list, bad), kind);
    return rc != ACLNN_SUCCESS ? rc : ACLNN_ERR_PARAM_INVALID;
}

PA_API aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyTensorList", "array", array, PA_HANDLE_TENSOR_LIST);
    if (rc != 0) return rc;
    aclTensorList *l = (aclTensorList *)array;
    rc = destroy_elements("aclDestroyTensorList", "tensorList", l, l->size, tensor_at, PA_HANDLE_TENSOR);
    free(l->tensors);
    pa_handle_retire(l, PA_HANDLE_TENSOR_LIST);
    return rc;
}

PA_API aclnnStatus aclDestroyScalarList(const aclScalarList *array) {
    if (array == NULL) return ACLNN_SUCCESS;
    int rc = pa_handle_take("aclDestroyScalarList", "array", array, PA_HANDLE_SCALAR_LIST);
    if (rc != 0) return rc;
    aclScalarList *l = (aclScalarList *)array;
    rc = destroy_elements("aclDestroyScalarList", "scalarList", l, l->size, scalar_at, PA_HANDLE_SCALAR);
    free(l->scalars);
    pa_handle_retire(l, PA_HANDLE_SCALAR_LIST);
    return rc;
}

/* ---- sizes ---- */

#define PA_GET_SIZE(FN, TYPE, KIND, WHAT)                                                             \
    PA_API aclnnStatus FN(const TYPE *array, uint64_t *size) {                                       \
        int rc = pa_handle_check(#FN, WHAT, array, KIND);                                            \
        if (rc != 0) return rc;                                                                      \
        if (size == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, #FN ": size is NULL");             \
        *size = array->size;                                                                         \
        return ACLNN_SUCCESS;                                                                        \
    }

PA_GET_SIZE(aclGetIntArraySize, aclIntArray, PA_HANDLE_INT_ARRAY, "array")
PA_GET_SIZE(aclGetFloatArraySize, aclFloatArray, PA_HANDLE_FLOAT_ARRAY, "array")
PA_GET_SIZE(aclGetBoolArraySize, aclBoolArray, PA_HANDLE_BOOL_ARRAY, "array")
PA_GET_SIZE(aclGetTensorListSize, aclTensorList, PA_HANDLE_TENSOR_LIST, "tensorList")
PA_GET_SIZE(aclGetScalarListSize, aclScalarList, PA_HANDLE_SCALAR_LIST, "scalarList")
