/* Element-wise reductions (pa_fold.h). Built with -ffp-contract=off: each
 * step is one rounded operation. */
#include "hccl/pa_fold.h"

#include <math.h>
#include <string.h>

#include "common/pa_half.h"

size_t pa_hccl_dtype_size(HcclDataType dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: case HCCL_DATA_TYPE_HIF8: case HCCL_DATA_TYPE_FP8E4M3:
    case HCCL_DATA_TYPE_FP8E5M2: case HCCL_DATA_TYPE_FP8E8M0: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_BFP16:
        return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64: case HCCL_DATA_TYPE_UINT64: case HCCL_DATA_TYPE_FP64: return 8;
    case HCCL_DATA_TYPE_INT128: return 16;
    default: return 0;
    }
}

const char *pa_hccl_dtype_name(HcclDataType dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return "int8";
    case HCCL_DATA_TYPE_INT16: return "int16";
    case HCCL_DATA_TYPE_INT32: return "int32";
    case HCCL_DATA_TYPE_FP16: return "float16";
    case HCCL_DATA_TYPE_FP32: return "float32";
    case HCCL_DATA_TYPE_INT64: return "int64";
    case HCCL_DATA_TYPE_UINT64: return "uint64";
    case HCCL_DATA_TYPE_UINT8: return "uint8";
    case HCCL_DATA_TYPE_UINT16: return "uint16";
    case HCCL_DATA_TYPE_UINT32: return "uint32";
    case HCCL_DATA_TYPE_FP64: return "float64";
    case HCCL_DATA_TYPE_BFP16: return "bfloat16";
    case HCCL_DATA_TYPE_INT128: return "int128";
    case HCCL_DATA_TYPE_HIF8: return "hif8";
    case HCCL_DATA_TYPE_FP8E4M3: return "fp8e4m3";
    case HCCL_DATA_TYPE_FP8E5M2: return "fp8e5m2";
    case HCCL_DATA_TYPE_FP8E8M0: return "fp8e8m0";
    default: return NULL;
    }
}

const char *pa_hccl_op_name(HcclReduceOp op) {
    switch (op) {
    case HCCL_REDUCE_SUM: return "sum";
    case HCCL_REDUCE_PROD: return "prod";
    case HCCL_REDUCE_MAX: return "max";
    case HCCL_REDUCE_MIN: return "min";
    default: return "unknown";
    }
}

bool pa_hccl_dtype_reducible(HcclDataType dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_FP32: case HCCL_DATA_TYPE_FP64:
    case HCCL_DATA_TYPE_BFP16: return true;
    default: return false;
    }
}

bool pa_hccl_prod_supported(HcclDataType dt) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_INT64: case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_FP32: case HCCL_DATA_TYPE_FP64: return true;
    default: return false;
    }
}

/* Integers: computed in the unsigned type of the same width (wrapping, no UB),
 * compared in the signed one. */
#define FOLD_INT(NAME, S, U, W)                                                                \
    static void NAME(HcclReduceOp op, void *accp, const void *inp, uint64_t n) {              \
        S *acc = accp;                                                                        \
        const S *in = inp;                                                                    \
        switch (op) {                                                                         \
        case HCCL_REDUCE_SUM:                                                                 \
            for (uint64_t i = 0; i < n; i++) acc[i] = (S)(U)((W)(U)acc[i] + (W)(U)in[i]);     \
            break;                                                                            \
        case HCCL_REDUCE_PROD:                                                                \
            for (uint64_t i = 0; i < n; i++) acc[i] = (S)(U)((W)(U)acc[i] * (W)(U)in[i]);     \
            break;                                                                            \
        case HCCL_REDUCE_MAX:                                                                 \
            for (uint64_t i = 0; i < n; i++) acc[i] = acc[i] >= in[i] ? acc[i] : in[i];       \
            break;                                                                            \
        default:                                                                              \
            for (uint64_t i = 0; i < n; i++) acc[i] = acc[i] <= in[i] ? acc[i] : in[i];       \
            break;                                                                            \
        }                                                                                     \
    }
/* W: an unsigned type at least as wide as unsigned int, so that no operand
 * promotes to (signed) int and the arithmetic wraps without UB. */
FOLD_INT(fold_i8, int8_t, uint8_t, uint32_t)
FOLD_INT(fold_i16, int16_t, uint16_t, uint32_t)
FOLD_INT(fold_i32, int32_t, uint32_t, uint32_t)
FOLD_INT(fold_i64, int64_t, uint64_t, uint64_t)
FOLD_INT(fold_u64, uint64_t, uint64_t, uint64_t)

#define FOLD_FLOAT(NAME, T)                                                                   \
    static void NAME(HcclReduceOp op, void *accp, const void *inp, uint64_t n) {              \
        T *acc = accp;                                                                        \
        const T *in = inp;                                                                    \
        switch (op) {                                                                         \
        case HCCL_REDUCE_SUM:                                                                 \
            for (uint64_t i = 0; i < n; i++) acc[i] = acc[i] + in[i];                         \
            break;                                                                            \
        case HCCL_REDUCE_PROD:                                                                \
            for (uint64_t i = 0; i < n; i++) acc[i] = acc[i] * in[i];                         \
            break;                                                                            \
        case HCCL_REDUCE_MAX:                                                                 \
            for (uint64_t i = 0; i < n; i++)                                                  \
                acc[i] = (acc[i] >= in[i] || isnan(acc[i])) ? acc[i] : in[i];                 \
            break;                                                                            \
        default:                                                                              \
            for (uint64_t i = 0; i < n; i++)                                                  \
                acc[i] = (acc[i] <= in[i] || isnan(acc[i])) ? acc[i] : in[i];                 \
            break;                                                                            \
        }                                                                                     \
    }
FOLD_FLOAT(fold_f32, float)
FOLD_FLOAT(fold_f64, double)

/* fp16 / bf16: widen, combine in fp32, round back (each step one correctly
 * rounded operation: fp32 has more than 2p+2 bits for both). MAX/MIN keep the
 * chosen input's bits. */
#define FOLD_HALF(NAME, TO_F32, FROM_F32)                                                     \
    static void NAME(HcclReduceOp op, void *accp, const void *inp, uint64_t n) {              \
        uint16_t *acc = accp;                                                                 \
        const uint16_t *in = inp;                                                             \
        for (uint64_t i = 0; i < n; i++) {                                                    \
            const float a = TO_F32(acc[i]), b = TO_F32(in[i]);                                \
            switch (op) {                                                                     \
            case HCCL_REDUCE_SUM: acc[i] = FROM_F32(a + b); break;                            \
            case HCCL_REDUCE_PROD: acc[i] = FROM_F32(a * b); break;                           \
            case HCCL_REDUCE_MAX: acc[i] = (a >= b || isnan(a)) ? acc[i] : in[i]; break;      \
            default: acc[i] = (a <= b || isnan(a)) ? acc[i] : in[i]; break;                   \
            }                                                                                 \
        }                                                                                     \
    }
FOLD_HALF(fold_f16, pa_f16_to_f32, pa_f32_to_f16)
FOLD_HALF(fold_bf16, pa_bf16_to_f32, pa_f32_to_bf16)

void pa_hccl_fold(HcclDataType dt, HcclReduceOp op, void *acc, const void *in, uint64_t n) {
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: fold_i8(op, acc, in, n); break;
    case HCCL_DATA_TYPE_INT16: fold_i16(op, acc, in, n); break;
    case HCCL_DATA_TYPE_INT32: fold_i32(op, acc, in, n); break;
    case HCCL_DATA_TYPE_INT64: fold_i64(op, acc, in, n); break;
    case HCCL_DATA_TYPE_UINT64: fold_u64(op, acc, in, n); break;
    case HCCL_DATA_TYPE_FP32: fold_f32(op, acc, in, n); break;
    case HCCL_DATA_TYPE_FP64: fold_f64(op, acc, in, n); break;
    case HCCL_DATA_TYPE_FP16: fold_f16(op, acc, in, n); break;
    case HCCL_DATA_TYPE_BFP16: fold_bf16(op, acc, in, n); break;
    default: break; /* rejected at the API */
    }
}
