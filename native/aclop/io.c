/* The tensors of an aclop call: each (aclTensorDesc, aclDataBuffer) pair checked
 * and turned into a contiguous ND aclTensor for the aclnn op that does the
 * work. FRACTAL_NZ data is converted to ND scratch before the op and back
 * after it; host-placed inputs (constants) are copied to device scratch. */
#include <stdio.h>
#include <string.h>

#include "aclop/pa_aclop_ops.h"
#include "runtime/pa_desc.h"
#include "runtime/pa_rt_base.h"
#include "runtime/pa_stream.h"

aclError pa_aclop_scratch(const char *api, size_t bytes, void **out) {
    *out = NULL;
    const aclError rc = aclrtMalloc(out, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    if (rc != ACL_SUCCESS) {
        char why[512];
        snprintf(why, sizeof why, "%s", pa_get_errmsg());
        *out = NULL;
        return pa_rt_fail(rc, "%s: no device memory for %zu bytes of scratch: %s", api, bytes, why);
    }
    return ACL_SUCCESS;
}

static int noop_task(void *arg) {
    PA_UNUSED(arg);
    return 0;
}

static void free_task(void *arg) { aclrtFree(arg); }

aclError pa_aclop_free_after(void *p, aclrtStream stream) {
    if (p == NULL) return ACL_SUCCESS;
    /* On a refused submission free_task runs at once: nothing was queued there. */
    return pa_stream_submit(stream, noop_task, free_task, p);
}

static int64_t prod(const int64_t *d, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || !pa_mul_ok(p, d[i], &p)) return -1;
    }
    return p;
}

/* One input (is_out false) or output. */
static aclError load_one(const char *api, const pa_aclop_def *op, bool is_out, int i, const aclTensorDesc *desc,
                         const aclDataBuffer *buf, aclrtStream stream, pa_aclop_tensor *t) {
    const char *kind = is_out ? "output" : "input";
    t->name = is_out ? op->out_names[i] : op->in_names[i];
    if (desc == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: %sDesc[%d] (%s) is NULL", api, op->name, kind, i,
                          t->name);
    }
    if (buf == NULL) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: %ss[%d] (%s) data buffer is NULL", api, op->name,
                          kind, i, t->name);
    }
    pa_desc_info d;
    pa_desc_get(desc, &d);
    t->dtype = d.dtype;
    t->format = d.format;
    const size_t es = pa_dtype_size(d.dtype);
    if (es == 0) {
        return pa_rt_fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "%s: op %s: %s %s has data type %s, which pyaclnn does "
                          "not handle", api, op->name, kind, t->name, pa_dtype_name(d.dtype));
    }
    /* the logical shape: as created (origin), which is also the storage shape of plain formats */
    const int on = d.origin_ndim;
    if (on > PA_MAX_DIMS || prod(d.origin_dims, on) < 0 || prod(d.dims, d.ndim) < 0) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: %s %s must have at most %d dims, all known and >= 0 "
                          "(dynamic shapes are not supported)", api, op->name, kind, t->name, PA_MAX_DIMS);
    }
    t->ndim = on;
    for (int k = 0; k < on; k++) t->dims[k] = d.origin_dims[k];
    const int64_t numel = prod(t->dims, on);
    int64_t storage = 0;
    if (pa_format_is_plain(d.format)) {
        storage = prod(d.dims, d.ndim);
        if (storage != numel) {
            char s1[160], s2[160];
            return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: %s %s storage shape %s (format %s) does not hold "
                              "its origin shape %s", api, op->name, kind, t->name,
                              pa_shape_str(d.dims, d.ndim, s1, sizeof s1), pa_format_name(d.format),
                              pa_shape_str(t->dims, on, s2, sizeof s2));
        }
    } else if (d.format == ACL_FORMAT_FRACTAL_NZ) {
        if (!pa_nz_layout_of(d.dtype, on, t->dims, &t->nz) || !pa_nz_storage_matches(&t->nz, d.ndim, d.dims)) {
            char s1[160], s2[160];
            return pa_rt_fail(ACL_ERROR_FORMAT_NOT_MATCH, "%s: op %s: %s %s: FRACTAL_NZ storage shape %s does not "
                              "match origin shape %s (%s): expected [..., ceil(W/C0), ceil(H/16), 16, C0]", api,
                              op->name, kind, t->name, pa_shape_str(d.dims, d.ndim, s1, sizeof s1),
                              pa_shape_str(t->dims, on, s2, sizeof s2), pa_dtype_name(d.dtype));
        }
        t->is_nz = true;
        storage = pa_nz_storage_elems(&t->nz);
    } else {
        return pa_rt_fail(ACL_ERROR_FORMAT_NOT_MATCH, "%s: op %s: %s %s format %s is not supported by pyaclnn (ND "
                          "formats and FRACTAL_NZ are)", api, op->name, kind, t->name, pa_format_name(d.format));
    }
    t->data = aclGetDataBufferAddr(buf);
    t->size = aclGetDataBufferSizeV2(buf);
    const uint64_t need = (uint64_t)storage * es;
    const bool host = d.placement != ACL_MEMTYPE_DEVICE;
    if (host && is_out) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: output %s is placed in host memory; outputs must be "
                          "device memory", api, op->name, t->name);
    }
    if (host && t->is_nz) {
        return pa_rt_fail(ACL_ERROR_FORMAT_NOT_MATCH, "%s: op %s: host input %s in FRACTAL_NZ is not supported", api,
                          op->name, t->name);
    }
    /* a host constant set with aclSetTensorConst needs no buffer */
    const void *host_src = host && d.const_data != NULL && d.const_len >= need ? d.const_data : NULL;
    if (host_src == NULL && (t->size < need || (need > 0 && t->data == NULL))) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: %s %s needs a buffer of %llu bytes, got %zu bytes at "
                          "%p", api, op->name, kind, t->name, (unsigned long long)need, t->size, t->data);
    }
    void *base = t->data;
    if (numel > 0 && (host || t->is_nz)) {
        const aclError rc = pa_aclop_scratch(api, (size_t)(numel * (int64_t)es), &t->scratch);
        if (rc != ACL_SUCCESS) return rc;
        base = t->scratch;
        if (host) {
            /* read now: host memory may change once this call returns */
            memcpy(t->scratch, host_src != NULL ? host_src : t->data, (size_t)need);
        } else if (!is_out) {
            const aclError rc = pa_nz_convert(api, d.dtype, &t->nz, t->data, t->scratch, false, stream);
            if (rc != ACL_SUCCESS) return rc;
        }
    }
    const int64_t flat = numel;
    t->t = aclCreateTensor(on > 0 ? t->dims : &flat, (uint64_t)on, d.dtype, NULL, 0, ACL_FORMAT_ND, &flat, 1, base);
    if (t->t == NULL) return pa_rt_fail_oom(api, "an operand's aclTensor");
    return ACL_SUCCESS;
}

aclError pa_aclop_io_load(const char *api, const pa_aclop_def *op, const aclTensorDesc *const inputDesc[],
                          const aclDataBuffer *const inputs[], const aclTensorDesc *const outputDesc[],
                          aclDataBuffer *const outputs[], aclrtStream stream, pa_aclop_io *io) {
    memset(io, 0, sizeof *io);
    if ((op->num_inputs > 0 && (inputDesc == NULL || inputs == NULL)) ||
        (op->num_outputs > 0 && (outputDesc == NULL || outputs == NULL))) {
        return pa_rt_fail(ACL_ERROR_INVALID_PARAM, "%s: op %s: the descriptor and buffer arrays must not be NULL",
                          api, op->name);
    }
    for (int i = 0; i < op->num_inputs; i++) {
        io->n_in = i + 1;
        const aclError rc = load_one(api, op, false, i, inputDesc[i], inputs[i], stream, &io->in[i]);
        if (rc != ACL_SUCCESS) return rc;
    }
    for (int i = 0; i < op->num_outputs; i++) {
        io->n_out = i + 1;
        const aclError rc = load_one(api, op, true, i, outputDesc[i], outputs[i], stream, &io->out[i]);
        if (rc != ACL_SUCCESS) return rc;
    }
    return ACL_SUCCESS;
}

aclError pa_aclop_io_release(const char *api, pa_aclop_io *io, aclrtStream stream, bool ok) {
    aclError first = ACL_SUCCESS;
    for (int i = 0; ok && i < io->n_out; i++) {
        pa_aclop_tensor *t = &io->out[i];
        if (!t->is_nz || t->scratch == NULL) continue;
        const aclError rc = pa_nz_convert(api, t->dtype, &t->nz, t->data, t->scratch, true, stream);
        if (rc != ACL_SUCCESS && first == ACL_SUCCESS) first = rc;
    }
    for (int k = 0; k < io->n_in + io->n_out; k++) {
        pa_aclop_tensor *t = k < io->n_in ? &io->in[k] : &io->out[k - io->n_in];
        if (t->t != NULL) aclDestroyTensor(t->t);
        t->t = NULL;
        const aclError rc = pa_aclop_free_after(t->scratch, stream);
        if (rc != ACL_SUCCESS && first == ACL_SUCCESS) first = rc;
        t->scratch = NULL;
    }
    return first;
}
