"""Matrix products (family "matmul", native/ops/matmul/, on the library GEMM
native/kernels/gemm/): Mm, BatchMatMul, Matmul, Mv, Addmm, Baddbmm (+ in
place), Ger, WeightQuantBatchMatmulV2, TransMatmulWeight and
CalculateMatmulWeightSizeV2."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "
SCALAR_AB = "f32 f16 f64 s8 s16 s32 s64 u8"          # Addmm's beta / alpha (A2)
SCALAR_AB_BMM = "f32 f16 f64 s32 s64 s16 s8 u8 bool"  # Baddbmm's
GER_IN = "f32 f16 s32 f64 s8 u8 s16 bool s64 c64 c128"

CUBE = ("cubeMathType: 0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION and 3 USE_HF32 compute fp32 exactly (HF32 is not "
        "emulated), 2 USE_FP16 rounds the inputs and the product to fp16 (as the NPU casts them), 4 USE_FP32_ADD "
        "is KEEP_DTYPE; fp32 accumulation in one fixed k order; bf16 x bf16 in vdpbf16ps's pairs (denormals "
        "flushed)")

ROWS = [
    ("Mm", "aclnn_mm.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType", "MM",
     dict(ins=FLOAT3, outs=FLOAT3, flags=("nz:mat2",), note="2-D; " + CUBE)),
    ("BatchMatMul", "aclnn_batch_matmul.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType",
     "BATCH_MATMUL", dict(ins=FLOAT3, outs=FLOAT3, flags=("nz:mat2",),
                          note="3-D, a batch of 1 broadcasts; " + CUBE)),
    ("Matmul", "aclnn_matmul.h", T + "self, const aclTensor* mat2, aclTensor* out, int8_t cubeMathType", "MATMUL",
     dict(ins=FLOAT3, outs=FLOAT3, flags=("nz:mat2",),
          note="1-6 D, torch.matmul's rules (1-D operands, batch broadcast as strides); " + CUBE)),
    ("Mv", "aclnn_mv.h", T + "self, const aclTensor* vec, aclTensor* out, int8_t cubeMathType", "MV",
     dict(ins=FLOAT3, outs=FLOAT3, note="self 2-D, vec and out 1-D, one dtype; " + CUBE)),
    ("Addmm", "aclnn_addmm.h", T + "self, const aclTensor* mat1, const aclTensor* mat2, const aclScalar* beta, "
     "const aclScalar* alpha, aclTensor* out, int8_t cubeMathType", "ADDMM",
     dict(ins=FLOAT3, outs=FLOAT3, dtypes={"beta": SCALAR_AB, "alpha": SCALAR_AB}, flags=("nz:mat2",),
          note="out = beta*self + alpha*(mat1 @ mat2) in fp32, self broadcast (1-2 D); beta 0 ignores self (NaN "
               "too), alpha 0 gives beta*self; " + CUBE)),
    ("InplaceAddmm", "aclnn_addmm.h", "const aclTensor* selfRef, const aclTensor* mat1, const aclTensor* mat2, "
     "const aclScalar* beta, const aclScalar* alpha, int8_t cubeMathType", "INPLACE_ADDMM",
     dict(ins=FLOAT3, outs=FLOAT3, dtypes={"beta": SCALAR_AB, "alpha": SCALAR_AB}, flags=("nz:mat2",),
          note="Addmm with out = selfRef")),
    ("Baddbmm", "aclnn_baddbmm.h", T + "self, const aclTensor* batch1, const aclTensor* batch2, "
     "const aclScalar* beta, const aclScalar* alpha, aclTensor* out, int8_t cubeMathType", "BADDBMM",
     dict(ins=FLOAT3, outs=FLOAT3, dtypes={"beta": SCALAR_AB_BMM, "alpha": SCALAR_AB_BMM}, flags=("nz:batch2",),
          note="out = beta*self + alpha*(batch1 @ batch2) in fp32, self broadcast to the product; beta 0 ignores "
               "self; " + CUBE)),
    ("InplaceBaddbmm", "aclnn_baddbmm.h", "const aclTensor* selfRef, const aclTensor* batch1, "
     "const aclTensor* batch2, const aclScalar* beta, const aclScalar* alpha, int8_t cubeMathType",
     "INPLACE_BADDBMM",
     dict(ins=FLOAT3, outs=FLOAT3, dtypes={"beta": SCALAR_AB_BMM, "alpha": SCALAR_AB_BMM}, flags=("nz:batch2",),
          note="Baddbmm with out = selfRef")),
    ("Ger", "aclnn_ger.h", T + "self, const aclTensor* vec2, aclTensor* out", "GER",
     dict(ins=GER_IN, outs=ALL12, note="outer product in the promoted dtype (bool: and), cast to out")),
    ("WeightQuantBatchMatmulV2", "aclnn_weight_quant_batch_matmul_v2.h",
     "const aclTensor* x, const aclTensor* weight, const aclTensor* antiquantScale, "
     "const aclTensor* antiquantOffsetOptional, const aclTensor* quantScaleOptional, "
     "const aclTensor* quantOffsetOptional, const aclTensor* biasOptional, int antiquantGroupSize, "
     "const aclTensor* y", "WQBMM",
     dict(ins="f16 bf16", outs="f16 bf16 s8",
          dtypes={"weight": "s8 s32", "antiquantScale": "f16 bf16 u64 s64", "antiquantOffsetOptional": "f16 bf16 s32",
                  "quantScaleOptional": "u64", "quantOffsetOptional": "f32", "biasOptional": "f16 bf16 f32"},
          flags=("nz:weight", "int4:weight", "out:y"),
          note="y = x @ ((weight + offset) * scale) + bias; the weight (int8 or int4, ND or NZ, any strides) is "
               "dequantised to x's dtype (each step rounded to it), fp32 accumulation; per-tensor, per-channel "
               "and per-group (antiquantGroupSize a multiple of 32 in [32, k-1]) scales; quantScale / int8 y, "
               "u64 / int32-packed forms are not implemented (161002)")),
    ("TransMatmulWeight", "aclnn_trans_matmul_weight.h", "aclTensor* mmWeightRef", "TRANS_WEIGHT",
     dict(ins="f32 f16 bf16 s8", outs="f32 f16 bf16 s8",
          note="rewrites the weight in place to pyaclnn's FRACTAL_NZ (column panels of 32 bytes, no padding: "
               "the same bytes count) and marks the tensor NZ; f32 is accepted too (ggml-cann converts f32 "
               "weights)")),
]

for _n, _h, _p, _k, _kw in ROWS:
    op(_n, _h, _p, family="matmul", kernel=_k, **_kw)

# One call, no executor.
op("CalculateMatmulWeightSizeV2", "aclnn_trans_matmul_weight.h",
   "const aclIntArray* tensorShape, aclDataType dataType, uint64_t* weightTensorSize", family="matmul",
   kernel="WEIGHT_SIZE", single=True,
   note="elements of the NZ weight as CANN counts them: 16-bit dtypes align the last two dims to 16, others the "
        "last to 32 and the second last to 16")
