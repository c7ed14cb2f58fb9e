// Causal attention probabilities with aclnnScaledMaskedSoftmax.
//
// A self-contained CANN-style program: it takes random attention logits x, a
// causal mask (True = key after the query) plus one fully masked query row (as a
// padding row would be), runs the two-phase aclnn operator on a stream, and
// checks y = softmax(x*scale with masked entries -10000) against a
// double-precision loop. It exits non-zero on any failure.
//
// Build (pyaclnn toolkit; with a CANN toolkit use $ASCEND_HOME_PATH instead):
//   HOME_DIR=$(python -m pyaclnn home)
//   g++ scaled_masked_softmax.cpp -I$HOME_DIR/include -L$HOME_DIR/lib64 \
//       -lascendcl -lnnopbase -lopapi -Wl,-rpath,$HOME_DIR/lib64
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"

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

const int64_t B = 2, N = 2, S1 = 8, S2 = 8;
const double kScale = 0.35355339059327373;  // 1/sqrt(head_dim) for head_dim = 8
const int64_t kPaddedRow = S1 - 1;          // this query row sees no key at all

struct Lcg {
  uint64_t state;
  double next() {  // in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
};

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
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND,
                                shape.data(), shape.size(), out->addr);
  if (out->tensor == nullptr) {
    std::fprintf(stderr, "aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  return 0;
}

bool Masked(int64_t i, int64_t j) { return i == kPaddedRow || j > i; }

int Run(aclrtStream stream) {
  const int64_t rows = B * N * S1, numel = rows * S2;
  std::vector<int64_t> shape = {B, N, S1, S2};
  std::vector<int64_t> mask_shape = {1, 1, S1, S2};  // one mask for every (b, n)

  Lcg rng{7};
  std::vector<float> x(numel);
  for (auto& v : x) v = static_cast<float>(4.0 * rng.next());
  std::vector<char> mask(S1 * S2);
  for (int64_t i = 0; i < S1; i++) {
    for (int64_t j = 0; j < S2; j++) mask[i * S2 + j] = Masked(i, j) ? 1 : 0;
  }

  DeviceTensor x_t, mask_t, y_t;
  CHECK(MakeTensor(x, shape, ACL_FLOAT, &x_t));
  CHECK(MakeTensor(mask, mask_shape, ACL_BOOL, &mask_t));
  CHECK(MakeTensor(std::vector<float>(numel, 0.0f), shape, ACL_FLOAT, &y_t));

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  CHECK(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x_t.tensor, mask_t.tensor, kScale, false, y_t.tensor,
                                                 &workspace_size, &executor));
  void* workspace = nullptr;
  if (workspace_size > 0) CHECK(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST));
  int status = aclnnScaledMaskedSoftmax(workspace, workspace_size, executor, stream);
  if (status == 0) status = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  CHECK(status);

  std::vector<float> y(numel);
  CHECK(aclrtMemcpy(y.data(), y.size() * sizeof(float), y_t.addr, numel * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST));

  // Check against the float64 loop: z = masked ? -10000 : x*scale (scale as a
  // float, like the operator), y = exp(z - max) / sum.
  const double scale = static_cast<float>(kScale);
  double max_err = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t i = r % S1;
    std::vector<double> z(S2);
    double zmax = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < S2; j++) {
      z[j] = Masked(i, j) ? -10000.0 : static_cast<double>(static_cast<float>(x[r * S2 + j] * scale));
      zmax = std::fmax(zmax, z[j]);
    }
    for (int64_t j = 0; j < S2; j++) sum += std::exp(z[j] - zmax);
    for (int64_t j = 0; j < S2; j++) {
      max_err = std::fmax(max_err, std::fabs(y[r * S2 + j] - std::exp(z[j] - zmax) / sum));
    }
  }

  std::printf("aclnnScaledMaskedSoftmax: x [%ld,%ld,%ld,%ld] float32, causal mask [1,1,%ld,%ld] with query row %ld "
              "fully masked, scale %.6f, workspace %llu bytes\n",
              (long)B, (long)N, (long)S1, (long)S2, (long)S1, (long)S2, (long)kPaddedRow, kScale,
              (unsigned long long)workspace_size);
  std::printf("y[0,0] (rows = queries, columns = keys; a fully masked row is uniform):\n");
  for (int64_t i = 0; i < S1; i++) {
    for (int64_t j = 0; j < S2; j++) std::printf("%10.6f", y[i * S2 + j]);
    std::printf("\n");
  }
  std::printf("max |y - float64 loop| = %.3g\n", max_err);
  if (!(max_err <= 1e-6)) {
    std::printf("FAILED: result does not match the reference\n");
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}

}  // namespace

int main() {
  int32_t device_id = 0;
  aclrtStream stream = nullptr;
  CHECK(aclInit(nullptr));
  CHECK(aclrtSetDevice(device_id));
  CHECK(aclrtCreateStream(&stream));
  int status = Run(stream);  // tensors are released before the runtime
  aclrtDestroyStream(stream);
  aclrtResetDevice(device_id);
  aclFinalize();
  return status == 0 ? 0 : 1;
}
