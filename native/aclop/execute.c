/* aclopCompileAndExecute / aclopCompileAndExecuteV2 / aclopExecuteV2: look the
 * op type up in the table of those pyaclnn runs and hand it to its adapter.
 * Any other op type: ACL_ERROR_OP_NOT_FOUND naming it. */
#include <stdio.h>
#include <string.h>

#include "aclop/pa_aclop_ops.h"
#include "runtime/pa_rt_base.h"

static const pa_aclop_def *find_op(const char *opType) {
    for (const pa_aclop_def *const *d = pa_aclop_table; *d != NULL; d++) {
        if (strcmp((*d)->name, opType) == 0) return *d;
    }
    return NULL;
}

static aclError run(const char *api, const char *opType, int numInputs, const aclTensorDesc *const inputDesc[],
                    const aclDataBuffer *const inputs[], int numOutputs, const aclTensorDesc *const outputDesc[],
                    aclDataBuffer *const outputs[], const aclopAttr *attr, aclopEngineType engineType,
                    aclrtStream stream) {
    if (opType == NULL) return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: opType must not be NULL", api);
    /* One info line per call (ASCEND_GLOBAL_LOG_LEVEL 0 or 1): how a test counts the ops a
     * framework sends to the single-op API instead of aclnn (tests/torch_npu/npu_models.py). */
    aclAppLog(ACL_INFO, api, __FILE__, __LINE__, "single-op API call: op type %.128s", opType);
    if (engineType != ACL_ENGINE_SYS && engineType != ACL_ENGINE_AICORE && engineType != ACL_ENGINE_VECTOR) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: engineType must be an aclopEngineType (0..2), got %d", api,
                          (int)engineType);
    }
    const pa_aclop_def *op = find_op(opType);
    if (op == NULL) {
        return pa_rt_fail(ACL_ERROR_OP_NOT_FOUND,
                          "%s: op type %.128s is not supported by pyaclnn (its single-operator API runs %s; the "
                          "aclnn operators pyaclnn implements are listed in docs/operators.md)", api,
                          opType, pa_aclop_names());
    }
    if (attr != NULL && !pa_attr_is_live(attr)) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: attr %p is not a live aclopAttr", api, op->name,
                          (const void *)attr);
    }
    if (numInputs != op->num_inputs || numOutputs != op->num_outputs) {
        return pa_rt_fail(numInputs != op->num_inputs ? ACL_ERROR_OP_INPUT_NOT_MATCH : ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                          "%s: op %s takes %d inputs and %d outputs, got %d and %d", api, op->name, op->num_inputs,
                          op->num_outputs, numInputs, numOutputs);
    }
    pa_aclop_io io;
    aclError rc = pa_aclop_io_load(api, op, inputDesc, inputs, outputDesc, outputs, stream, &io);
    if (rc == ACL_SUCCESS) rc = op->run(&io, attr, stream);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", pa_get_errmsg()); /* the first error is the one to report */
    const aclError rel = pa_aclop_io_release(api, &io, stream, rc == ACL_SUCCESS);
    if (rc != ACL_SUCCESS) {
        pa_set_errmsg_raw(msg);
        return rc;
    }
    return rel;
}

PA_API aclError aclopCompileAndExecute(const char *opType, int numInputs, const aclTensorDesc *const inputDesc[],
                                       const aclDataBuffer *const inputs[], int numOutputs,
                                       const aclTensorDesc *const outputDesc[], aclDataBuffer *const outputs[],
                                       const aclopAttr *attr, aclopEngineType engineType,
                                       aclopCompileType compileFlag, const char *opPath, aclrtStream stream) {
    PA_UNUSED(opPath);
    if (compileFlag != ACL_COMPILE_SYS && compileFlag != ACL_COMPILE_UNREGISTERED) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclopCompileAndExecute: compileFlag must be ACL_COMPILE_SYS or ACL_COMPILE_UNREGISTERED");
    }
    return run("aclopCompileAndExecute", opType, numInputs, inputDesc, inputs, numOutputs, outputDesc, outputs, attr,
               engineType, stream);
}

PA_API aclError aclopCompileAndExecuteV2(const char *opType, int numInputs, aclTensorDesc *inputDesc[],
                                         aclDataBuffer *inputs[], int numOutputs, aclTensorDesc *outputDesc[],
                                         aclDataBuffer *outputs[], aclopAttr *attr, aclopEngineType engineType,
                                         aclopCompileType compileFlag, const char *opPath, aclrtStream stream) {
    PA_UNUSED(opPath);
    if (compileFlag != ACL_COMPILE_SYS && compileFlag != ACL_COMPILE_UNREGISTERED) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM,
                          "aclopCompileAndExecuteV2: compileFlag must be ACL_COMPILE_SYS or ACL_COMPILE_UNREGISTERED");
    }
    return run("aclopCompileAndExecuteV2", opType, numInputs, (const aclTensorDesc *const *)inputDesc,
               (const aclDataBuffer *const *)inputs, numOutputs, (const aclTensorDesc *const *)outputDesc, outputs,
               attr, engineType, stream);
}

PA_API aclError aclopExecuteV2(const char *opType, int numInputs, aclTensorDesc *inputDesc[], aclDataBuffer *inputs[],
                               int numOutputs, aclTensorDesc *outputDesc[], aclDataBuffer *outputs[],
                               aclopAttr *attr, aclrtStream stream) {
    return run("aclopExecuteV2", opType, numInputs, (const aclTensorDesc *const *)inputDesc,
               (const aclDataBuffer *const *)inputs, numOutputs, (const aclTensorDesc *const *)outputDesc, outputs,
               attr, ACL_ENGINE_SYS, stream);
}
