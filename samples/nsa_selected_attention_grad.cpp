// pyaclnn sample: aclnnNsaSelectedAttentionGrad (backward of NSA selected-block attention).
//
// A small, meaningful problem in layout TND:
//   two batches, query lengths 3 and 5 (T1 = 8), key/value lengths 128 and 160 (T2 = 288),
//   N1 = 4 query heads sharing N2 = 2 key/value heads (G = 2),
//   D = 192 for query/key and Dv = 128 for value (the MLA shape),
//   blocks of 16 keys, 4 blocks selected per (token, kv head), sparseMode 0.
// Inputs are fp16, drawn from a fixed LCG; the forward pass (attentionOut and the
// softmax statistics the backward needs) is computed here on the host. The three
// gradients are requested in fp32 and checked against a double-precision loop that
// rounds P and dS to fp16 before the products that use them, as the NPU does (and
// pyaclnn by default); the program exits with 1 if they do not match.
//
// Build (pyaclnn):
//   HOME_DIR=$(python -m pyaclnn home)
//   g++ nsa_selected_attention_grad.cpp -I$HOME_DIR/include -L$HOME_DIR/lib64
//       -lascendcl -lnnopbase -lopapi -Wl,-rpath,$HOME_DIR/lib64 -o nsa_grad_sample   (one line)
// Run:   ./nsa_grad_sample [--dump DIR]
// --dump DIR writes every input and output as a raw little-endian file plus DIR/meta.txt,
// so a test can recompute the expected gradients from exactly the same data.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"

#define CHECK_RET(cond, expr) \
    do {                      \
        if (!(cond)) {        \
            expr;             \
        }                     \
    } while (0)

namespace {

// Problem size.
const int64_t kBatch = 2;
const int64_t kSeqQ[kBatch] = {3, 5};
const int64_t kSeqKv[kBatch] = {128, 160};
const int64_t kN1 = 4;
const int64_t kN2 = 2;
const int64_t kD = 192;
const int64_t kDv = 128;
const int64_t kBlock = 16;
const int64_t kCount = 4;
const int64_t kSparseMode = 0;
const int64_t kStatLanes = 8;  // softmaxMax/Sum carry 8 identical copies per row

// 64-bit LCG (Knuth's MMIX constants); uniform() uses the top 24 bits.
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

int64_t Numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
}

// Fills an fp16 buffer and keeps the float value of every rounded element.
void FillHalf(Lcg& rng, float lo, float hi, std::vector<aclFloat16>& bits, std::vector<float>& vals) {
    for (size_t i = 0; i < bits.size(); ++i) {
        bits[i] = aclFloatToFloat16(rng.uniform(lo, hi));
        vals[i] = aclFloat16ToFloat(bits[i]);
    }
}

// Copies host data to a new device buffer and wraps it in a contiguous ND tensor.
template <typename T>
int MakeTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype, void** dev,
               aclTensor** tensor) {
    size_t bytes = host.size() * sizeof(T);
    aclError ret = aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMalloc failed: %d\n", ret); return ret);
    ret = aclrtMemcpy(*dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMemcpy H2D failed: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), *dev);
    CHECK_RET(*tensor != nullptr, printf("aclCreateTensor failed\n"); return 1);
    return 0;
}

template <typename T>
bool DumpRaw(const std::string& dir, const char* name, const std::vector<T>& data) {
    std::string path = dir + "/" + name;
    FILE* f = fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    size_t n = fwrite(data.data(), sizeof(T), data.size(), f);
    fclose(f);
    return n == data.size();
}

void PrintValues(const char* name, const std::vector<float>& data, int64_t start, int64_t n) {
    for (int64_t i = start; i < start + n; ++i) printf("%s[%lld] = %.9g\n", name, static_cast<long long>(i), data[i]);
}

void PrintChecksum(const char* name, const std::vector<float>& data) {
    double sum = 0.0, asum = 0.0;
    for (float x : data) {
        sum += x;
        asum += std::fabs(x);
    }
    printf("checksum %s: sum=%.9g abs=%.9g\n", name, sum, asum);
}

// Expected gradients in double from exactly the values handed to the operator:
// P = exp(S - max) / sum with the given statistics, Dsum = rowsum(dY * attentionOut),
// dS = P * (dP - Dsum), dQ = scale * dS K, dK += scale * dS^T Q, dV += P^T dY.
// x rounded to fp16 precision, to nearest with ties away from zero (the NPU's CAST_ROUND of
// P and dS; |x| < 65504 here).
double RoundToHalf(double x) {
    const double a = std::fabs(x);
    if (a == 0.0) return x;
    int e;
    std::frexp(a, &e);                                  // a in [2^(e-1), 2^e)
    const double step = std::ldexp(1.0, std::max(e - 11, -24));
    return std::copysign(std::floor(a / step + 0.5) * step, x);
}

void ReferenceGrad(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                   const std::vector<float>& o, const std::vector<float>& dy, const std::vector<float>& smax,
                   const std::vector<float>& ssum, const std::vector<int32_t>& topk, const int64_t* cumQ,
                   const int64_t* cumKv, double scale, std::vector<double>& dq, std::vector<double>& dk,
                   std::vector<double>& dv) {
    const int64_t t1 = cumQ[kBatch - 1], g = kN1 / kN2, sel = kCount * kBlock;
    dq.assign(q.size(), 0.0);
    dk.assign(k.size(), 0.0);
    dv.assign(v.size(), 0.0);
    for (int64_t t = 0, b = 0; t < t1; ++t) {
        while (t >= cumQ[b]) ++b;
        const int64_t kv0 = b == 0 ? 0 : cumKv[b - 1];
        for (int64_t n1 = 0; n1 < kN1; ++n1) {
            const int64_t n2 = n1 / g;
            const int32_t* idx = &topk[(t * kN2 + n2) * kCount];
            const float* qr = &q[(t * kN1 + n1) * kD];
            const float* dyr = &dy[(t * kN1 + n1) * kDv];
            const double m = smax[(t * kN1 + n1) * kStatLanes], l = ssum[(t * kN1 + n1) * kStatLanes];
            double dsum = 0.0;
            for (int64_t d = 0; d < kDv; ++d) dsum += static_cast<double>(dyr[d]) * o[(t * kN1 + n1) * kDv + d];
            for (int64_t j = 0; j < sel; ++j) {
                const int64_t row = kv0 + static_cast<int64_t>(idx[j / kBlock]) * kBlock + j % kBlock;
                const float* kr = &k[(row * kN2 + n2) * kD];
                const float* vr = &v[(row * kN2 + n2) * kDv];
                double s = 0.0, dp = 0.0;
                for (int64_t d = 0; d < kD; ++d) s += static_cast<double>(qr[d]) * kr[d];
                for (int64_t d = 0; d < kDv; ++d) dp += static_cast<double>(dyr[d]) * vr[d];
                const double p = std::exp(s * scale - m) / l;
                const double ds = RoundToHalf(p * (dp - dsum));   // from the unrounded P
                const double p16 = RoundToHalf(p);
                for (int64_t d = 0; d < kD; ++d) {
                    dq[(t * kN1 + n1) * kD + d] += scale * ds * kr[d];
                    dk[(row * kN2 + n2) * kD + d] += scale * ds * qr[d];
                }
                for (int64_t d = 0; d < kDv; ++d) dv[(row * kN2 + n2) * kDv + d] += p16 * dyr[d];
            }
        }
    }
}

// Largest |got - want| relative to max |want|; prints it and returns whether it is within tol.
bool Compare(const char* name, const std::vector<float>& got, const std::vector<double>& want, double tol) {
    double err = 0.0, peak = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        err = std::fmax(err, std::fabs(got[i] - want[i]));
        peak = std::fmax(peak, std::fabs(want[i]));
    }
    const bool ok = err <= tol * peak;
    printf("%s: max |error| = %.3g, max |expected| = %.3g -> %s\n", name, err, peak, ok ? "ok" : "MISMATCH");
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    std::string dumpDir;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
            dumpDir = argv[++i];
        } else {
            printf("usage: %s [--dump DIR]\n", argv[0]);
            return 2;
        }
    }

    // ---- 1. Runtime: device 0 and one stream.
    int32_t deviceId = 0;
    aclrtStream stream = nullptr;
    aclError ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclInit failed: %d\n", ret); return 1);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclrtSetDevice failed: %d\n", ret); return 1);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclrtCreateStream failed: %d\n", ret); return 1);

    // ---- 2. Host inputs.
    int64_t cumQ[kBatch], cumKv[kBatch];
    int64_t t1 = 0, t2 = 0;
    for (int64_t b = 0; b < kBatch; ++b) {
        t1 += kSeqQ[b];
        t2 += kSeqKv[b];
        cumQ[b] = t1;
        cumKv[b] = t2;
    }
    const int64_t g = kN1 / kN2;
    const double scale = 1.0 / std::sqrt(static_cast<double>(kD));

    std::vector<int64_t> qShape = {t1, kN1, kD}, kShape = {t2, kN2, kD}, vShape = {t2, kN2, kDv};
    std::vector<int64_t> oShape = {t1, kN1, kDv}, statShape = {t1, kN1, kStatLanes}, topkShape = {t1, kN2, kCount};

    Lcg rng(20250101ULL);
    std::vector<aclFloat16> qBits(Numel(qShape)), kBits(Numel(kShape)), vBits(Numel(vShape)), dyBits(Numel(oShape));
    std::vector<float> q(qBits.size()), k(kBits.size()), v(vBits.size()), dy(dyBits.size());
    FillHalf(rng, -1.0f, 1.0f, qBits, q);
    FillHalf(rng, -1.0f, 1.0f, kBits, k);
    FillHalf(rng, -1.0f, 1.0f, vBits, v);
    FillHalf(rng, -1.0f, 1.0f, dyBits, dy);

    // topkIndices: kCount distinct blocks of the token's own batch (partial Fisher-Yates),
    // block numbers relative to the batch's first key.
    std::vector<int32_t> topk(Numel(topkShape));
    for (int64_t t = 0, b = 0; t < t1; ++t) {
        while (t >= cumQ[b]) ++b;
        int64_t nBlocks = kSeqKv[b] / kBlock;
        for (int64_t n2 = 0; n2 < kN2; ++n2) {
            std::vector<int32_t> pool(nBlocks);
            for (int64_t i = 0; i < nBlocks; ++i) pool[i] = static_cast<int32_t>(i);
            for (int64_t i = 0; i < kCount; ++i) {
                int64_t j = i + rng.below(nBlocks - i);
                std::swap(pool[i], pool[j]);
                topk[(t * kN2 + n2) * kCount + i] = pool[i];
            }
        }
    }

    // Forward pass on the host (double): scores over the kCount*kBlock selected keys,
    // row max, row sum of exp, attentionOut = softmax . V.
    std::vector<aclFloat16> oBits(Numel(oShape));
    std::vector<float> o(oBits.size());
    std::vector<float> smax(Numel(statShape)), ssum(Numel(statShape));
    const int64_t sel = kCount * kBlock;
    std::vector<double> score(sel), acc(kDv);
    for (int64_t t = 0, b = 0; t < t1; ++t) {
        while (t >= cumQ[b]) ++b;
        int64_t kv0 = b == 0 ? 0 : cumKv[b - 1];
        for (int64_t n1 = 0; n1 < kN1; ++n1) {
            int64_t n2 = n1 / g;
            const int32_t* idx = &topk[(t * kN2 + n2) * kCount];
            double mx = -INFINITY;
            for (int64_t j = 0; j < sel; ++j) {
                int64_t row = kv0 + static_cast<int64_t>(idx[j / kBlock]) * kBlock + j % kBlock;
                double s = 0.0;
                for (int64_t d = 0; d < kD; ++d) s += static_cast<double>(q[(t * kN1 + n1) * kD + d]) * k[(row * kN2 + n2) * kD + d];
                score[j] = s * scale;
                mx = std::fmax(mx, score[j]);
            }
            double sum = 0.0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j < sel; ++j) {
                int64_t row = kv0 + static_cast<int64_t>(idx[j / kBlock]) * kBlock + j % kBlock;
                double e = std::exp(score[j] - mx);
                sum += e;
                for (int64_t d = 0; d < kDv; ++d) acc[d] += e * v[(row * kN2 + n2) * kDv + d];
            }
            for (int64_t d = 0; d < kDv; ++d) {
                oBits[(t * kN1 + n1) * kDv + d] = aclFloatToFloat16(static_cast<float>(acc[d] / sum));
                o[(t * kN1 + n1) * kDv + d] = aclFloat16ToFloat(oBits[(t * kN1 + n1) * kDv + d]);
            }
            for (int64_t l = 0; l < kStatLanes; ++l) {
                smax[(t * kN1 + n1) * kStatLanes + l] = static_cast<float>(mx);
                ssum[(t * kN1 + n1) * kStatLanes + l] = static_cast<float>(sum);
            }
        }
    }

    // ---- 3. Device tensors.
    std::vector<float> dq(Numel(qShape), 0.0f), dk(Numel(kShape), 0.0f), dv(Numel(vShape), 0.0f);
    void *qDev = nullptr, *kDev = nullptr, *vDev = nullptr, *oDev = nullptr, *dyDev = nullptr;
    void *maxDev = nullptr, *sumDev = nullptr, *topkDev = nullptr, *dqDev = nullptr, *dkDev = nullptr, *dvDev = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *vT = nullptr, *oT = nullptr, *dyT = nullptr;
    aclTensor *maxT = nullptr, *sumT = nullptr, *topkT = nullptr, *dqT = nullptr, *dkT = nullptr, *dvT = nullptr;
    int rc = 0;
    rc |= MakeTensor(qBits, qShape, ACL_FLOAT16, &qDev, &qT);
    rc |= MakeTensor(kBits, kShape, ACL_FLOAT16, &kDev, &kT);
    rc |= MakeTensor(vBits, vShape, ACL_FLOAT16, &vDev, &vT);
    rc |= MakeTensor(oBits, oShape, ACL_FLOAT16, &oDev, &oT);
    rc |= MakeTensor(dyBits, oShape, ACL_FLOAT16, &dyDev, &dyT);
    rc |= MakeTensor(smax, statShape, ACL_FLOAT, &maxDev, &maxT);
    rc |= MakeTensor(ssum, statShape, ACL_FLOAT, &sumDev, &sumT);
    rc |= MakeTensor(topk, topkShape, ACL_INT32, &topkDev, &topkT);
    rc |= MakeTensor(dq, qShape, ACL_FLOAT, &dqDev, &dqT);
    rc |= MakeTensor(dk, kShape, ACL_FLOAT, &dkDev, &dkT);
    rc |= MakeTensor(dv, vShape, ACL_FLOAT, &dvDev, &dvT);
    CHECK_RET(rc == 0, printf("creating tensors failed\n"); return 1);
    aclIntArray* seqQ = aclCreateIntArray(cumQ, kBatch);
    aclIntArray* seqKv = aclCreateIntArray(cumKv, kBatch);
    CHECK_RET(seqQ != nullptr && seqKv != nullptr, printf("aclCreateIntArray failed\n"); return 1);

    // ---- 4. The two-phase call.
    char layout[] = "TND";
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus st = aclnnNsaSelectedAttentionGradGetWorkspaceSize(
        qT, kT, vT, oT, dyT, maxT, sumT, topkT, seqQ, seqKv, nullptr, scale, kBlock, kCount, kN1, layout, kSparseMode,
        dqT, dkT, dvT, &workspaceSize, &executor);
    CHECK_RET(st == ACL_SUCCESS,
              printf("aclnnNsaSelectedAttentionGradGetWorkspaceSize failed: %d (%s)\n", st, aclGetRecentErrMsg());
              return 1);
    void* workspace = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, printf("workspace allocation failed: %d\n", ret); return 1);
    }
    st = aclnnNsaSelectedAttentionGrad(workspace, workspaceSize, executor, stream);
    CHECK_RET(st == ACL_SUCCESS,
              printf("aclnnNsaSelectedAttentionGrad failed: %d (%s)\n", st, aclGetRecentErrMsg()); return 1);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS,
              printf("aclrtSynchronizeStream failed: %d (%s)\n", ret, aclGetRecentErrMsg()); return 1);

    // ---- 5. Results back to the host.
    ret = aclrtMemcpy(dq.data(), dq.size() * sizeof(float), dqDev, dq.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
    ret |= aclrtMemcpy(dk.data(), dk.size() * sizeof(float), dkDev, dk.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
    ret |= aclrtMemcpy(dv.data(), dv.size() * sizeof(float), dvDev, dv.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, printf("aclrtMemcpy D2H failed\n"); return 1);

    printf("aclnnNsaSelectedAttentionGrad: T1=%lld T2=%lld N1=%lld N2=%lld D=%lld Dv=%lld block=%lld count=%lld "
           "sparseMode=%lld workspace=%llu bytes\n",
           (long long)t1, (long long)t2, (long long)kN1, (long long)kN2, (long long)kD, (long long)kDv,
           (long long)kBlock, (long long)kCount, (long long)kSparseMode, (unsigned long long)workspaceSize);
    // dq: token 0 head 0, and the last token's last head.
    PrintValues("dq", dq, 0, 4);
    PrintValues("dq", dq, ((t1 - 1) * kN1 + kN1 - 1) * kD, 4);
    // dk/dv: the first key of the first block selected by token 0 for kv head 0 (batch 0 starts at key 0).
    int64_t row = static_cast<int64_t>(topk[0]) * kBlock;
    PrintValues("dk", dk, (row * kN2 + 0) * kD, 4);
    PrintValues("dv", dv, (row * kN2 + 0) * kDv, 4);
    PrintChecksum("dq", dq);
    PrintChecksum("dk", dk);
    PrintChecksum("dv", dv);
    // Keys no token selected get exactly zero gradient.
    int64_t unselected = 0;
    for (int64_t r = 0; r < t2 * kN2; ++r) {
        bool zero = true;
        for (int64_t d = 0; d < kD && zero; ++d) zero = dk[r * kD + d] == 0.0f;
        for (int64_t d = 0; d < kDv && zero; ++d) zero = dv[r * kDv + d] == 0.0f;
        unselected += zero ? 1 : 0;
    }
    printf("key rows (key, kv head) with zero dk and dv: %lld of %lld\n", (long long)unselected, (long long)(t2 * kN2));

    // Check against the double-precision loop (fp32 outputs: relative tolerance 1e-4 of the peak).
    std::vector<double> refDq, refDk, refDv;
    ReferenceGrad(q, k, v, o, dy, smax, ssum, topk, cumQ, cumKv, scale, refDq, refDk, refDv);
    bool match = Compare("dq", dq, refDq, 1e-4);
    match = Compare("dk", dk, refDk, 1e-4) && match;
    match = Compare("dv", dv, refDv, 1e-4) && match;

    if (!dumpDir.empty()) {
        bool ok = DumpRaw(dumpDir, "query.bin", qBits) && DumpRaw(dumpDir, "key.bin", kBits) &&
                  DumpRaw(dumpDir, "value.bin", vBits) && DumpRaw(dumpDir, "attention_out.bin", oBits) &&
                  DumpRaw(dumpDir, "attention_out_grad.bin", dyBits) && DumpRaw(dumpDir, "softmax_max.bin", smax) &&
                  DumpRaw(dumpDir, "softmax_sum.bin", ssum) && DumpRaw(dumpDir, "topk_indices.bin", topk) &&
                  DumpRaw(dumpDir, "dq.bin", dq) && DumpRaw(dumpDir, "dk.bin", dk) && DumpRaw(dumpDir, "dv.bin", dv);
        std::string metaPath = dumpDir + "/meta.txt";
        FILE* f = ok ? fopen(metaPath.c_str(), "w") : nullptr;
        CHECK_RET(f != nullptr, printf("cannot write dump files to %s\n", dumpDir.c_str()); return 1);
        fprintf(f, "T1 %lld\nT2 %lld\nN1 %lld\nN2 %lld\nD %lld\nDv %lld\n", (long long)t1, (long long)t2,
                (long long)kN1, (long long)kN2, (long long)kD, (long long)kDv);
        fprintf(f, "block %lld\ncount %lld\nsparse_mode %lld\nscale %.17g\n", (long long)kBlock, (long long)kCount,
                (long long)kSparseMode, scale);
        fprintf(f, "actual_seq_qlen");
        for (int64_t b = 0; b < kBatch; ++b) fprintf(f, " %lld", (long long)cumQ[b]);
        fprintf(f, "\nactual_seq_kvlen");
        for (int64_t b = 0; b < kBatch; ++b) fprintf(f, " %lld", (long long)cumKv[b]);
        fprintf(f, "\n");
        fclose(f);
        printf("inputs and outputs written to %s\n", dumpDir.c_str());
    }

    // ---- 6. Release everything.
    aclTensor* tensors[] = {qT, kT, vT, oT, dyT, maxT, sumT, topkT, dqT, dkT, dvT};
    for (aclTensor* t : tensors) aclDestroyTensor(t);
    aclDestroyIntArray(seqQ);
    aclDestroyIntArray(seqKv);
    void* buffers[] = {qDev, kDev, vDev, oDev, dyDev, maxDev, sumDev, topkDev, dqDev, dkDev, dvDev, workspace};
    for (void* p : buffers)
        if (p != nullptr) aclrtFree(p);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    if (!match) {
        printf("result check FAILED\n");
        return 1;
    }
    printf("result check passed\n");
    return 0;
}
