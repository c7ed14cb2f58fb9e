// libatb.so: the smallest stand-in for Ascend Transformer Boost that lets
// torch_npu's ATB plugin (libop_plugin_atb.so, loaded by `import torch_npu`)
// link. pyaclnn has no ATB operations: creating a context or an operation
// fails with ERROR_CANN_ERROR and an error-level log line naming the call;
// Utils::GetTensorSize is implemented. The declarations follow ATB's public
// headers (namespace atb, Status = int32_t), so the symbols get ATB's names.
#include <cstdint>

#include "acl/acl.h"

// Everything declared in namespace atb is exported (the library is built with
// -fvisibility=hidden): the CreateOperation specialisations take their
// visibility from the parameter types too.
#pragma GCC visibility push(default)
namespace atb {
using Status = int32_t;
constexpr Status ERROR_INVALID_PARAM = 1;
constexpr Status ERROR_CANN_ERROR = 12;
constexpr uint32_t MAX_DIM = 8;

struct Dims {
    int64_t dims[MAX_DIM];
    uint64_t dimNum = 0;
};
struct TensorDesc {
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    Dims shape;
};
struct Tensor {
    TensorDesc desc;
    void *deviceData = nullptr;
    void *hostData = nullptr;
    uint64_t dataSize = 0;
};
class Context;
class Operation;
namespace infer {
struct LinearParam;
struct ElewiseParam;
struct RmsNormParam;
struct GroupTopkParam;
struct SelfAttentionParam;
struct PagedAttentionParam;
struct ReshapeAndCacheParam;
struct RopeParam;
}  // namespace infer

Status CreateContext(Context **context);
Status DestroyContext(Context *context);
Status DestroyOperation(Operation *operation);
template <typename OpParam>
Status CreateOperation(const OpParam &opParam, Operation **operation);
class Utils {
public:
    static uint64_t GetTensorSize(const Tensor &tensor);
};

namespace {
Status unsupported(const char *api) {
    aclAppLog(ACL_ERROR, api, __FILE__, __LINE__,
              "%s: not supported by pyaclnn (no Ascend Transformer Boost operations on the CPU)", api);
    return ERROR_CANN_ERROR;
}
}  // namespace

Status CreateContext(Context **context) {
    if (context != nullptr) *context = nullptr;
    return unsupported("atb::CreateContext");
}

Status DestroyContext(Context *context) {
    // No context can exist: CreateContext never makes one.
    return context == nullptr ? ERROR_INVALID_PARAM : unsupported("atb::DestroyContext");
}

Status DestroyOperation(Operation *operation) {
    return operation == nullptr ? ERROR_INVALID_PARAM : unsupported("atb::DestroyOperation");
}

#define PA_ATB_CREATE_OPERATION(P)                                                    \
    template <>                                                                       \
    Status CreateOperation<infer::P>(const infer::P &, Operation **operation) {       \
        if (operation != nullptr) *operation = nullptr;                               \
        return unsupported("atb::CreateOperation<atb::infer::" #P ">");              \
    }
PA_ATB_CREATE_OPERATION(LinearParam)
PA_ATB_CREATE_OPERATION(ElewiseParam)
PA_ATB_CREATE_OPERATION(RmsNormParam)
PA_ATB_CREATE_OPERATION(GroupTopkParam)
PA_ATB_CREATE_OPERATION(SelfAttentionParam)
PA_ATB_CREATE_OPERATION(PagedAttentionParam)
PA_ATB_CREATE_OPERATION(ReshapeAndCacheParam)
PA_ATB_CREATE_OPERATION(RopeParam)

uint64_t Utils::GetTensorSize(const Tensor &tensor) {
    const uint64_t n = tensor.desc.shape.dimNum;
    if (n == 0 || n > MAX_DIM) return 0;
    uint64_t count = 1;
    for (uint64_t i = 0; i < n; i++) {
        if (tensor.desc.shape.dims[i] < 0) return 0;
        count *= static_cast<uint64_t>(tensor.desc.shape.dims[i]);
    }
    return count * aclDataTypeSize(tensor.desc.dtype);
}
}  // namespace atb
#pragma GCC visibility pop
