// Backward of a causal attention softmax with aclnnScaledMaskedSoftmaxBackward.
//
// A self-contained CANN-style program: it builds attention probabilities
// y = softmax(scale * logits) under a causal mask, a random upstream gradient
// dy, runs the two-phase aclnn operator on a stream, and checks the result
// against a double-precision loop. It exits non-zero on any failure.
//
// Build (pyaclnn toolkit; with a CANN toolkit use $ASCEND_HOME_PATH instead):
//   HOME_DIR=$(python -m pyaclnn home)
//   g++ scaled_masked_softmax_backward.cpp -I$HOME_DIR/include -L$HOME_DIR/lib64 \
//       -lascendcl -lnnopbase -lopapi -Wl,-rpath,$HOME_DIR/lib64
// Run: ./a.out [--dump DIR]   (--dump writes inputs and output as raw files)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

#define CHECK(expr)                                                                   \
  do {                                                                                \
    int status_ = (expr);                                                             \
    if (status_ != 0) {                                                               \
      std::fprintf(stderr, "%s failed: status %d: %s\n", #expr, status_,              \
                   aclGetRecentErrMsg());                                             \
      return status_;                                                                 \
    }                                                                                 \
  } while (0)

namespace {

// Shape of the problem: batch B, heads N, query length S1, key length S2.
const int64_t B = 2, N = 2, S1 = 8, S2 = 8;
const double kScale = 0.35355339059327373;  // 1/sqrt(head_dim) for head_dim = 8

// Small deterministic generator (values in [-1, 1)), so every run is identical.
struct Lcg {
  uint64_t state;
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
};

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  return strides;
}

// One device allocation + the aclTensor describing it.
struct DeviceTensor {
  void* addr = nullptr;
  aclTensor* tensor = nullptr;
  ~DeviceTensor() {
    aclDestroyTensor(tensor);
    if (addr != nullptr) aclrtFree(addr);
  }
};

template <typename T>
int MakeTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype,
               DeviceTensor* out) {
  size_t bytes = host.size() * sizeof(T);
  CHECK(aclrtMalloc(&out->addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMemcpy(out->addr, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  std::vector<int64_t> strides = ContiguousStrides(shape);
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND,
                                shape.data(), shape.size(), out->addr);
  if (out->tensor == nullptr) {
    std::fprintf(stderr, "aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  return 0;
}

bool Masked(int64_t i, int64_t j) { return j > i; }  // causal: key j after query i

bool WriteFile(const std::string& path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(data, 1, bytes, f) == bytes;
  return std::fclose(f) == 0 && ok;
}

int Run(aclrtStream stream, const char* dump_dir) {
  const int64_t rows = B * N * S1, numel = rows * S2;
  std::vector<int64_t> shape = {B, N, S1, S2};
  std::vector<int64_t> mask_shape = {1, 1, S1, S2};  // one causal mask for all (b, n)

  // Inputs: y = softmax over each row of the masked, scaled logits; dy random.
  Lcg rng{2024};
  std::vector<float> y(numel), dy(numel);
  std::vector<char> mask(S1 * S2);
  for (int64_t i = 0; i < S1; i++) {
    for (int64_t j = 0; j < S2; j++) mask[i * S2 + j] = Masked(i, j) ? 1 : 0;
  }
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = r % S1;
    std::vector<double> z(S2);
    double zmax = -1e300, sum = 0.0;
    for (int64_t j = 0; j < S2; j++) {
      z[j] = Masked(i, j) ? -10000.0 : kScale * 4.0 * rng.next();
      zmax = std::fmax(zmax, z[j]);
    }
    for (int64_t j = 0; j < S2; j++) sum += std::exp(z[j] - zmax);
    for (int64_t j = 0; j < S2; j++) {
      y[r * S2 + j] = static_cast<float>(std::exp(z[j] - zmax) / sum);
      dy[r * S2 + j] = static_cast<float>(rng.next());
    }
  }

  DeviceTensor dy_t, y_t, mask_t, out_t;
  CHECK(MakeTensor(dy, shape, ACL_FLOAT, &dy_t));
  CHECK(MakeTensor(y, shape, ACL_FLOAT, &y_t));
  CHECK(MakeTensor(mask, mask_shape, ACL_BOOL, &mask_t));
  CHECK(MakeTensor(std::vector<float>(numel, 0.0f), shape, ACL_FLOAT, &out_t));

  // Phase 1: validate and plan; phase 2: queue on the stream; then wait.
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  CHECK(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(dy_t.tensor, y_t.tensor, mask_t.tensor, kScale,
                                                         false, out_t.tensor, &workspace_size, &executor));
  void* workspace = nullptr;
  if (workspace_size > 0) CHECK(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST));
  int status = aclnnScaledMaskedSoftmaxBackward(workspace, workspace_size, executor, stream);
  if (status == 0) status = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  CHECK(status);

  std::vector<float> dx(numel);
  CHECK(aclrtMemcpy(dx.data(), dx.size() * sizeof(float), out_t.addr, numel * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST));

  // Check: dx = scale * (dy*y - sum(dy*y) * y), and exactly 0 where masked.
  double max_err = 0.0, max_row_sum = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    const float* yr = &y[r * S2];
    const float* gr = &dy[r * S2];
    double dot = 0.0, row_sum = 0.0;
    for (int64_t j = 0; j < S2; j++) dot += static_cast<double>(gr[j]) * yr[j];
    for (int64_t j = 0; j < S2; j++) {
      double want = Masked(r % S1, j) ? 0.0 : kScale * (static_cast<double>(gr[j]) * yr[j] - dot * yr[j]);
      double got = dx[r * S2 + j];
      if (Masked(r % S1, j) && got != 0.0) max_err = INFINITY;
      max_err = std::fmax(max_err, std::fabs(got - want));
      row_sum += got;
    }
    max_row_sum = std::fmax(max_row_sum, std::fabs(row_sum));
  }

  std::printf("aclnnScaledMaskedSoftmaxBackward: dy, y [%ld,%ld,%ld,%ld] float32, causal mask [1,1,%ld,%ld], "
              "scale %.6f, workspace %llu bytes\n",
              (long)B, (long)N, (long)S1, (long)S2, (long)S1, (long)S2, kScale,
              (unsigned long long)workspace_size);
  std::printf("dx[0,0] (rows = queries, columns = keys; masked entries are 0):\n");
  for (int64_t i = 0; i < S1; i++) {
    for (int64_t j = 0; j < S2; j++) std::printf("%10.6f", dx[i * S2 + j]);
    std::printf("\n");
  }
  std::printf("largest |row sum of dx| = %.3g (softmax gradients sum to 0 per row)\n", max_row_sum);
  std::printf("max |dx - float64 loop| = %.3g\n", max_err);

  if (dump_dir != nullptr) {
    std::string d(dump_dir);
    FILE* meta = std::fopen((d + "/meta.txt").c_str(), "w");
    if (meta == nullptr) return 1;
    std::fprintf(meta, "%ld %ld %ld %ld 1 1 %.17g\n", (long)B, (long)N, (long)S1, (long)S2, kScale);
    std::fclose(meta);
    if (!WriteFile(d + "/grad.bin", dy.data(), numel * sizeof(float)) ||
        !WriteFile(d + "/y.bin", y.data(), numel * sizeof(float)) ||
        !WriteFile(d + "/mask.bin", mask.data(), mask.size()) ||
        !WriteFile(d + "/out.bin", dx.data(), numel * sizeof(float))) {
      std::fprintf(stderr, "cannot write to %s\n", dump_dir);
      return 1;
    }
  }

  if (!(max_err <= 1e-5)) {
    std::printf("FAILED: result does not match the reference\n");
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dump_dir = nullptr;
  if (argc == 3 && std::strcmp(argv[1], "--dump") == 0) {
    dump_dir = argv[2];
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--dump DIR]\n", argv[0]);
    return 2;
  }
  int32_t device_id = 0;
  aclrtStream stream = nullptr;
  CHECK(aclInit(nullptr));
  CHECK(aclrtSetDevice(device_id));
  CHECK(aclrtCreateStream(&stream));

  int status = Run(stream, dump_dir);  // tensors are released before the runtime

  aclrtDestroyStream(stream);
  aclrtResetDevice(device_id);
  aclFinalize();
  return status == 0 ? 0 : 1;
}
