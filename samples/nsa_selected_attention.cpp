// pyaclnn sample: aclnnNsaSelectedAttention (forward of NSA selected-block attention).
//
// Layout TND: two batches, query lengths 40 and 24 (T1 = 64), key/value lengths
// 128 and 96 (T2 = 224); N1 = 4 query heads share N2 = 2 key/value heads (G = 2);
// D = 192 for query/key and Dv = 128 for value; every (token, kv head) selects 4
// blocks of 16 keys of its own batch (the token's own block first, a duplicate in
// some rows). sparseMode 2 WITH an attenMask, so the kernel applies the causal
// rule (key j visible iff j <= s); the mask's values are never read.
// Inputs are fp16 from a fixed LCG. attentionOut (fp16) and the softmax statistics
// (fp32 [T1, N1, 8]) are checked against a double-precision loop with the vendor's
// rules; the program exits with 1 if they do not match.
//
// Build (pyaclnn):
//   HOME_DIR=$(python -m pyaclnn home)
//   g++ nsa_selected_attention.cpp -I$HOME_DIR/include -L$HOME_DIR/lib64
//       -lascendcl -lnnopbase -lopapi -Wl,-rpath,$HOME_DIR/lib64 -o nsa_sample   (one line)

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_nsa_selected_attention.h"

namespace {

const int64_t kBatch = 2;
const int64_t kSeqQ[kBatch] = {40, 24};
const int64_t kSeqKv[kBatch] = {128, 96};
const int64_t kN1 = 4, kN2 = 2, kD = 192, kDv = 128, kBlock = 16, kCount = 4;
const int64_t kSparseMode = 2;
const int64_t kLanes = 8;

struct Lcg {
    uint64_t state;
    explicit Lcg(uint64_t seed) : state(seed) {}
    uint32_t next24() {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(state >> 40);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * (next24() / 16777216.0f); }
    int64_t below(int64_t n) { return static_cast<int64_t>(next24() % static_cast<uint32_t>(n)); }
};

struct DevTensor {
    void* dev = nullptr;
    aclTensor* t = nullptr;
    ~DevTensor() {
        if (t != nullptr) aclDestroyTensor(t);
        if (dev != nullptr) aclrtFree(dev);
    }
};

// A contiguous ND tensor over a new device buffer, filled from host (if given).
bool MakeTensor(const void* host, size_t bytes, const std::vector<int64_t>& shape, aclDataType dtype,
                DevTensor* out) {
    if (aclrtMalloc(&out->dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return false;
    if (host != nullptr &&
        aclrtMemcpy(out->dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
        return false;
    }
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    out->t = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                             shape.size(), out->dev);
    return out->t != nullptr;
}

}  // namespace

int main() {
    int64_t T1 = 0, T2 = 0;
    std::vector<int64_t> cumQ, cumKv;
    for (int64_t b = 0; b < kBatch; ++b) {
        T1 += kSeqQ[b];
        T2 += kSeqKv[b];
        cumQ.push_back(T1);
        cumKv.push_back(T2);
    }
    const int64_t G = kN1 / kN2, L = kBlock * kCount;
    const double scale = 1.0 / std::sqrt(static_cast<double>(kD));

    // ---- inputs (fp16) and their float values
    Lcg rng(2026);
    std::vector<aclFloat16> q(T1 * kN1 * kD), k(T2 * kN2 * kD), v(T2 * kN2 * kDv);
    std::vector<float> qf(q.size()), kf(k.size()), vf(v.size());
    for (size_t i = 0; i < q.size(); ++i) qf[i] = aclFloat16ToFloat(q[i] = aclFloatToFloat16(rng.uniform(-1, 1)));
    for (size_t i = 0; i < k.size(); ++i) kf[i] = aclFloat16ToFloat(k[i] = aclFloatToFloat16(rng.uniform(-1, 1)));
    for (size_t i = 0; i < v.size(); ++i) vf[i] = aclFloat16ToFloat(v[i] = aclFloatToFloat16(rng.uniform(-1, 1)));
    std::vector<int32_t> topk(T1 * kN2 * kCount);
    std::vector<int64_t> tokS(T1), tokKv0(T1);
    for (int64_t b = 0, t = 0; b < kBatch; ++b) {
        const int64_t nblk = kSeqKv[b] / kBlock;
        for (int64_t s = 0; s < kSeqQ[b]; ++s, ++t) {
            tokS[t] = s;
            tokKv0[t] = b ? cumKv[b - 1] : 0;
            for (int64_t h = 0; h < kN2; ++h) {
                int32_t* sel = &topk[(t * kN2 + h) * kCount];
                sel[0] = static_cast<int32_t>(std::min(s / kBlock, nblk - 1));  // own block: visible keys
                for (int64_t i = 1; i < kCount; ++i) sel[i] = static_cast<int32_t>(rng.below(nblk));
                if (rng.below(3) == 0) sel[kCount - 1] = sel[1];                 // a duplicate
            }
        }
    }
    std::vector<uint8_t> mask(2048 * 2048, 1);  // only its presence matters

    // ---- runtime
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        printf("runtime init failed\n");
        return 1;
    }
    aclrtStream stream = nullptr;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;
    int rc = 1;
    {
        DevTensor tq, tk, tv, tt, tm, tmax, tsum, tout;
        const std::vector<int64_t> statShape = {T1, kN1, kLanes};
        bool ok = MakeTensor(q.data(), q.size() * 2, {T1, kN1, kD}, ACL_FLOAT16, &tq) &&
                  MakeTensor(k.data(), k.size() * 2, {T2, kN2, kD}, ACL_FLOAT16, &tk) &&
                  MakeTensor(v.data(), v.size() * 2, {T2, kN2, kDv}, ACL_FLOAT16, &tv) &&
                  MakeTensor(topk.data(), topk.size() * 4, {T1, kN2, kCount}, ACL_INT32, &tt) &&
                  MakeTensor(mask.data(), mask.size(), {2048, 2048}, ACL_BOOL, &tm) &&
                  MakeTensor(nullptr, T1 * kN1 * kLanes * 4, statShape, ACL_FLOAT, &tmax) &&
                  MakeTensor(nullptr, T1 * kN1 * kLanes * 4, statShape, ACL_FLOAT, &tsum) &&
                  MakeTensor(nullptr, T1 * kN1 * kDv * 2, {T1, kN1, kDv}, ACL_FLOAT16, &tout);
        if (!ok) {
            printf("tensor setup failed\n");
            return 1;
        }
        aclIntArray* seqQ = aclCreateIntArray(cumQ.data(), cumQ.size());
        aclIntArray* seqKv = aclCreateIntArray(cumKv.data(), cumKv.size());
        char layout[] = "TND";
        uint64_t wsSize = 0;
        aclOpExecutor* executor = nullptr;
        aclnnStatus st = aclnnNsaSelectedAttentionGetWorkspaceSize(
            tq.t, tk.t, tv.t, tt.t, tm.t, seqQ, seqKv, scale, kN1, layout, kSparseMode, kBlock, kCount, tmax.t,
            tsum.t, tout.t, &wsSize, &executor);
        aclDestroyIntArray(seqQ);
        aclDestroyIntArray(seqKv);
        if (st != ACL_SUCCESS) {
            printf("aclnnNsaSelectedAttentionGetWorkspaceSize failed: %d (%s)\n", st, aclGetRecentErrMsg());
            return 1;
        }
        void* ws = nullptr;
        if (wsSize > 0 && aclrtMalloc(&ws, wsSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
        st = aclnnNsaSelectedAttention(ws, wsSize, executor, stream);
        if (st == ACL_SUCCESS) st = aclrtSynchronizeStream(stream);
        if (ws != nullptr) aclrtFree(ws);
        if (st != ACL_SUCCESS) {
            printf("aclnnNsaSelectedAttention failed: %d (%s)\n", st, aclGetRecentErrMsg());
            return 1;
        }
        printf("aclnnNsaSelectedAttention: T1=%lld T2=%lld N1=%lld N2=%lld D=%lld Dv=%lld block=%lld count=%lld, "
               "workspace %llu bytes\n",
               (long long)T1, (long long)T2, (long long)kN1, (long long)kN2, (long long)kD, (long long)kDv,
               (long long)kBlock, (long long)kCount, (unsigned long long)wsSize);

        std::vector<aclFloat16> out(T1 * kN1 * kDv);
        std::vector<float> smax(T1 * kN1 * kLanes), ssum(smax.size());
        aclrtMemcpy(out.data(), out.size() * 2, tout.dev, out.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST);
        aclrtMemcpy(smax.data(), smax.size() * 4, tmax.dev, smax.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
        aclrtMemcpy(ssum.data(), ssum.size() * 4, tsum.dev, ssum.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);

        // ---- double-precision check with the vendor's rules
        const float scale32 = static_cast<float>(scale);
        const double masked = static_cast<double>(-FLT_MAX * scale32);
        double worstOut = 0.0, worstStat = 0.0;
        std::vector<double> S(L), o(kDv);
        for (int64_t t = 0; t < T1; ++t) {
            for (int64_t n1 = 0; n1 < kN1; ++n1) {
                const int64_t h = n1 / G;
                const int32_t* sel = &topk[(t * kN2 + h) * kCount];
                double m = -INFINITY;
                for (int64_t j = 0; j < L; ++j) {
                    const int64_t pos = sel[j / kBlock] * kBlock + j % kBlock;
                    if (pos > tokS[t]) {
                        S[j] = masked;
                    } else {
                        double acc = 0.0;
                        const float* qr = &qf[(t * kN1 + n1) * kD];
                        const float* kr = &kf[((tokKv0[t] + pos) * kN2 + h) * kD];
                        for (int64_t d = 0; d < kD; ++d) acc += static_cast<double>(qr[d]) * kr[d];
                        S[j] = acc * scale32;
                    }
                    m = std::max(m, S[j]);
                }
                double l = 0.0;
                std::fill(o.begin(), o.end(), 0.0);
                for (int64_t j = 0; j < L; ++j) {
                    const double e = std::exp(S[j] - m);
                    l += e;
                    const int64_t pos = sel[j / kBlock] * kBlock + j % kBlock;
                    const float* vr = &vf[((tokKv0[t] + pos) * kN2 + h) * kDv];
                    for (int64_t d = 0; d < kDv; ++d) o[d] += e * vr[d];
                }
                for (int64_t d = 0; d < kDv; ++d) {
                    const double got = aclFloat16ToFloat(out[(t * kN1 + n1) * kDv + d]);
                    worstOut = std::max(worstOut, std::fabs(got - o[d] / l));
                }
                for (int64_t c = 0; c < kLanes; ++c) {
                    const int64_t i = (t * kN1 + n1) * kLanes + c;
                    worstStat = std::max(worstStat, std::fabs(smax[i] - m) / std::max(1.0, std::fabs(m)));
                    worstStat = std::max(worstStat, std::fabs(ssum[i] - l) / std::max(1.0, l));
                }
            }
        }
        printf("attentionOut[0, 0, 0..3] = %.6f %.6f %.6f %.6f\n", aclFloat16ToFloat(out[0]),
               aclFloat16ToFloat(out[1]), aclFloat16ToFloat(out[2]), aclFloat16ToFloat(out[3]));
        printf("softmaxMax[0, 0, 0] = %.7g  softmaxSum[0, 0, 0] = %.7g\n", smax[0], ssum[0]);
        printf("max |attentionOut - reference| = %.3g (fp16 output), max relative stat error = %.3g\n", worstOut,
               worstStat);
        if (worstOut <= 1e-3 && worstStat <= 1e-5) {
            printf("OK\n");
            rc = 0;
        } else {
            printf("MISMATCH\n");
        }
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return rc;
}
