"""Convolution, im2col, pooling and the triangular solve (native/ops/conv/, kernels in
native/kernels/conv/). Prototypes, A2 (910B) dtype lists and checks from the vendor's op_api
sources (ops-nn conv/convolution_forward, pooling/avg_pool3_d, pooling/max_pool_v3; ops-math
conversion/im2col, math/triangular_solve)."""
from . import ANY, ALL12, FLOAT3, FLOAT4, FLOAT_OUT, op, _planned  # noqa: F401


T = "const aclTensor* "

# fp32 convolution / pooling compute: products and sums in fp32, in one fixed order
# (input channel, then kernel depth, height, width), the result rounded once.
CONV_NOTE = ("1-D / 2-D / 3-D, transposed, groups, asymmetric padding (conv1d 2 values, conv2d 4); formats NCL / "
             "NCHW / NCDHW (3-D also NDHWC) as CANN; bias optional; inputs rounded to the compute dtype (both f16: "
             "f16, both bf16: bf16, else f32; cubeMathType 2: f16), fp32 products and sums in a fixed order, one "
             "rounding to the kernel's output dtype; cubeMathType 1 / 3 (HF32 on the NPU) compute in full fp32")

ROWS = [
    ("Convolution", "aclnn_convolution.h", "const aclTensor* input, const aclTensor* weight, const aclTensor* bias, "
     "const aclIntArray* stride, const aclIntArray* padding, const aclIntArray* dilation, bool transposed, "
     "const aclIntArray* outputPadding, const int64_t groups, aclTensor* output, int8_t cubeMathType",
     "CONVOLUTION", FLOAT3, FLOAT3, {"bias": FLOAT3}, ("optional:bias", "optional:outputPadding"), CONV_NOTE),
    ("Im2col", "aclnn_im2col.h", T + "self, const aclIntArray* kernelSize, const aclIntArray* dilation, "
     "const aclIntArray* padding, const aclIntArray* stride, const aclTensor* out",
     "IM2COL", FLOAT3, FLOAT3, {}, (),
     "self (C, H, W) or (N, C, H, W), out (C*kh*kw, L) or (N, C*kh*kw, L) as torch's unfold; out may have "
     "another of the three dtypes (converted)"),
    ("AvgPool2d", "aclnn_avgpool2d.h", T + "self, const aclIntArray* kernelSize, const aclIntArray* strides, "
     "const aclIntArray* paddings, const bool ceilMode, const bool countIncludePad, const int64_t divisorOverride, "
     "const int8_t cubeMathType, aclTensor* out",
     "AVG_POOL2D", FLOAT3, FLOAT3, {}, (),
     "NCHW / NCL; fp32 window sums divided once (torch's divisor rules); fp32 self with cubeMathType 1, 3 or 4 "
     "refused where CANN's cube path runs (161002); cubeMathType 2 computes fp32 in fp16 there"),
    ("MaxPool", "aclnn_max_pool.h", T + "self, const aclIntArray* kernelShape, const aclIntArray* strides, "
     "const int64_t autoPad, const aclIntArray* pads, const aclIntArray* dilations, const int64_t ceilMode, "
     "aclTensor* out",
     "MAX_POOL", "f16 f32", "f16 f32", {}, (),
     "ONNX-style attributes: strides empty = 1, pads (top, left, bottom, right), autoPad 0 and dilations 1 only; "
     "padding never wins; NaN propagates"),
    ("TriangularSolve", "aclnn_triangular_solve.h", T + "self, const aclTensor* A, bool upper, bool transpose, "
     "bool unitriangular, aclTensor* xOut, aclTensor* mOut",
     "TRIANGULAR_SOLVE", "f32 f64 c64 c128", "f32 f64 c64 c128", {}, ("optional:mOut",),
     "batch dims broadcast; substitution in the dtype (fp32 / fp64) in a fixed order; mOut (optional, as CANN's "
     "code) = A broadcast; unitriangular only for FLOAT (161002)"),
]

for _n, _h, _p, _k, _ins, _outs, _dts, _flags, _note in ROWS:
    op(_n, _h, _p, family="conv", kernel=_k, ins=_ins, outs=_outs, dtypes=_dts, flags=_flags, note=_note)
