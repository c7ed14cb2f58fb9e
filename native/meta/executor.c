/* aclOpExecutor: an op's plan (a POD blob) plus where its tensor views live
 * inside it, launched on a stream by copying the blob into a task.
 *
 * Lifetime: an executor serves one launch unless aclSetAclOpExecutorRepeatable
 * was called (then it lives until aclDestroyAclOpExecutor). So that reusing a
 * spent executor is a clear error instead of a use-after-free, every live
 * executor is in a registry (a mutex-protected hash set; handles are looked up
 * there before being dereferenced), and a spent one is parked in a quarantine
 * ring of the last PA_QUARANTINE spent executors before its memory is freed. */
#include "meta/pa_executor.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pa_memory.h"
#include "runtime/pa_stream.h"

#define PA_EXECUTOR_MAGIC 0x45786563u /* "Exec" */
#define PA_QUARANTINE 1024

struct aclOpExecutor {
    uint32_t magic;
    bool repeatable;
    const pa_op_def *op;
    uint64_t workspace_size;
    int n_in, n_out;
    size_t in_views[PA_MAX_IO];
    size_t out_views[PA_MAX_IO];
    struct aclOpExecutor *next; /* registry bucket chain */
    size_t plan_size;
    max_align_t plan[];         /* plan_size bytes */
};

/* A launch: a private copy of the plan, run once on the stream worker. */
typedef struct pa_launch_task {
    const pa_op_def *op;
    void *workspace;
    uint64_t workspace_size;
    uint64_t workspace_need; /* from GetWorkspaceSize */
    int n_in, n_out;
    size_t views[2 * PA_MAX_IO]; /* inputs, then outputs */
    max_align_t plan[];
} pa_launch_task;

/* ---- registry of live executors + quarantine of spent ones ---- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static aclOpExecutor **g_buckets;
static size_t g_nbuckets;
static size_t g_count;
static aclOpExecutor *g_ring[PA_QUARANTINE];
static size_t g_ring_head; /* next slot to write */
static size_t g_ring_count;

static size_t bucket_of(const aclOpExecutor *ex, size_t nbuckets) {
    uint64_t h = (uint64_t)(uintptr_t)ex;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)(h & (nbuckets - 1));
}

/* Grows the table (power of two) to keep chains short. Lock held. */
static bool registry_reserve(void) {
    if (g_buckets != NULL && g_count < g_nbuckets * 2) return true;
    size_t n = g_nbuckets ? g_nbuckets * 2 : 256;
    aclOpExecutor **b = calloc(n, sizeof *b);
    if (b == NULL) return g_buckets != NULL; /* keep the old table; chains just get longer */
    for (size_t i = 0; i < g_nbuckets; i++) {
        aclOpExecutor *e = g_buckets[i];
        while (e != NULL) {
            aclOpExecutor *next = e->next;
            size_t k = bucket_of(e, n);
            e->next = b[k];
            b[k] = e;
            e = next;
        }
    }
    free(g_buckets);
    g_buckets = b;
    g_nbuckets = n;
    return true;
}

/* Compares addresses only: never dereferences an unknown handle. Lock held. */
static bool registry_has(const aclOpExecutor *ex) {
    if (g_buckets == NULL) return false;
    for (aclOpExecutor *e = g_buckets[bucket_of(ex, g_nbuckets)]; e != NULL; e = e->next) {
        if (e == ex) return true;
    }
    return false;
}

static void registry_remove(aclOpExecutor *ex) {
    if (g_buckets == NULL) return;
    aclOpExecutor **pp = &g_buckets[bucket_of(ex, g_nbuckets)];
    while (*pp != NULL) {
        if (*pp == ex) {
            *pp = ex->next;
            ex->next = NULL;
            g_count--;
            return;
        }
        pp = &(*pp)->next;
    }
}

static bool quarantine_has(const aclOpExecutor *ex) {
    for (size_t i = 0; i < g_ring_count; i++) {
        if (g_ring[i] == ex) return true;
    }
    return false;
}

/* Parks a spent executor; frees the oldest one when the ring is full. Lock held. */
static void quarantine_push(aclOpExecutor *ex) {
    if (g_ring_count == PA_QUARANTINE) {
        aclOpExecutor *old = g_ring[g_ring_head];
        old->magic = 0;
        free(old);
    } else {
        g_ring_count++;
    }
    g_ring[g_ring_head] = ex;
    g_ring_head = (g_ring_head + 1) % PA_QUARANTINE;
}

static void quarantine_drain(void) {
    for (size_t i = 0; i < g_ring_count; i++) {
        g_ring[i]->magic = 0;
        free(g_ring[i]);
        g_ring[i] = NULL;
    }
    g_ring_count = 0;
    g_ring_head = 0;
}

/* Classifies a non-NULL handle. Lock held. Returns 0 if live. */
static int check_live(const char *api, const aclOpExecutor *ex) {
    if (registry_has(ex)) return ACLNN_SUCCESS;
    if (quarantine_has(ex)) {
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: executor was already used by a launch; call aclSetAclOpExecutorRepeatable after "
                       "GetWorkspaceSize to launch it again",
                       api);
    }
    return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p is not a live executor", api, (const void *)ex);
}

/* ---- creation / launch (internal) ---- */

aclOpExecutor *pa_executor_create(const pa_op_def *op, const void *plan, size_t plan_size,
                                  uint64_t workspace_size, const size_t *in_views, int n_in,
                                  const size_t *out_views, int n_out) {
    if (op == NULL || (plan == NULL && plan_size > 0) || n_in < 0 || n_out < 0 || n_in > PA_MAX_IO ||
        n_out > PA_MAX_IO || (n_in > 0 && in_views == NULL) || (n_out > 0 && out_views == NULL)) {
        pa_set_errmsg("%s: internal error: bad executor description", op ? op->name : "aclnn");
        return NULL;
    }
    for (int i = 0; i < n_in + n_out; i++) {
        size_t off = i < n_in ? in_views[i] : out_views[i - n_in];
        if (off != SIZE_MAX && (off > plan_size || plan_size - off < sizeof(pa_tview))) {
            pa_set_errmsg("%s: internal error: tensor view %d lies outside the plan", op->name, i);
            return NULL;
        }
    }
    if (plan_size > SIZE_MAX - sizeof(aclOpExecutor)) {
        pa_set_errmsg("%s: internal error: plan too large", op->name);
        return NULL;
    }
    aclOpExecutor *ex = malloc(sizeof *ex + plan_size);
    if (ex == NULL) {
        pa_set_errmsg("%sGetWorkspaceSize: out of host memory for the executor", op->name);
        return NULL;
    }
    memset(ex, 0, sizeof *ex);
    ex->magic = PA_EXECUTOR_MAGIC;
    ex->op = op;
    ex->workspace_size = workspace_size;
    ex->n_in = n_in;
    ex->n_out = n_out;
    for (int i = 0; i < n_in; i++) ex->in_views[i] = in_views[i];
    for (int i = 0; i < n_out; i++) ex->out_views[i] = out_views[i];
    ex->plan_size = plan_size;
    if (plan_size > 0) memcpy(ex->plan, plan, plan_size);

    pthread_mutex_lock(&g_lock);
    if (!registry_reserve()) {
        pthread_mutex_unlock(&g_lock);
        free(ex);
        pa_set_errmsg("%sGetWorkspaceSize: out of host memory for the executor registry", op->name);
        return NULL;
    }
    size_t k = bucket_of(ex, g_nbuckets);
    ex->next = g_buckets[k];
    g_buckets[k] = ex;
    g_count++;
    pthread_mutex_unlock(&g_lock);
    return ex;
}

static const char *view_name(const pa_launch_task *t, int i, char *buf, size_t cap) {
    const char *const *names = i < t->n_in ? t->op->in_names : t->op->out_names;
    const int k = i < t->n_in ? i : i - t->n_in;
    if (names != NULL) return names[k];
    snprintf(buf, cap, "%s %d", i < t->n_in ? "input" : "output", k);
    return buf;
}

/* The launch-time address checks of every view that addresses an element,
 * and of the workspace. */
static int check_addresses(const pa_launch_task *t) {
    const int device = pa_stream_task_device();
    for (int i = 0; i < t->n_in + t->n_out; i++) {
        if (t->views[i] == SIZE_MAX) continue;
        pa_tview v;
        memcpy(&v, (const char *)t->plan + t->views[i], sizeof v);
        bool empty = false;
        for (int32_t d = 0; d < v.ndim; d++) empty = empty || v.dims[d] == 0;
        if (empty) continue; /* touches no memory (its address may be NULL) */
        char buf[32];
        const char *name = view_name(t, i, buf, sizeof buf);
        if (v.base == NULL) {
            return pa_fail(ACLNN_ERR_RUNTIME_ERROR,
                           "%s: %s has no device address (its data pointer is NULL); give one in aclCreateTensor "
                           "or with aclSetInputTensorAddr / aclSetOutputTensorAddr",
                           t->op->name, name);
        }
        /* storage_elems * size <= PA_MAX_STORAGE_BYTES (pa_tensor_check_view) */
        const uint64_t bytes = (uint64_t)v.storage_elems * pa_dtype_size(v.dtype);
        char what[96];
        snprintf(what, sizeof what, "%s storage", name);
        int rc = pa_mem_check_access(t->op->name, what, v.base, bytes, device);
        if (rc != 0) return rc;
    }
    /* an op that needs no workspace never touches it */
    if (t->workspace_need > 0) {
        return pa_mem_check_access(t->op->name, "workspace", t->workspace, t->workspace_size, device);
    }
    return 0;
}

static int run_task(void *arg) {
    pa_launch_task *t = arg;
    int rc = check_addresses(t);
    if (rc != 0) return rc;
    return t->op->run(t->plan, t->workspace, t->workspace_size);
}

static void free_task(void *arg) { free(arg); }

aclnnStatus pa_executor_launch(const pa_op_def *op, void *workspace, uint64_t workspace_size,
                               aclOpExecutor *executor, aclrtStream stream) {
    if (executor == NULL) return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is NULL", op->name);
    pthread_mutex_lock(&g_lock);
    int rc = check_live(op->name, executor);
    if (rc != 0) {
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    if (executor->op != op) {
        const char *made_by = executor->op->name;
        pthread_mutex_unlock(&g_lock);
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: executor was made by %sGetWorkspaceSize, not by %sGetWorkspaceSize", op->name,
                       made_by, op->name);
    }
    if (workspace_size < executor->workspace_size) {
        const uint64_t need = executor->workspace_size;
        pthread_mutex_unlock(&g_lock);
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: workspaceSize must be at least %llu (from GetWorkspaceSize), got %llu", op->name,
                       (unsigned long long)need, (unsigned long long)workspace_size);
    }
    if (workspace == NULL && executor->workspace_size > 0) {
        const uint64_t need = executor->workspace_size;
        pthread_mutex_unlock(&g_lock);
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspace is NULL but the op needs %llu bytes", op->name,
                       (unsigned long long)need);
    }
    pa_launch_task *task = malloc(sizeof *task + executor->plan_size);
    if (task == NULL) {
        if (!executor->repeatable) { /* spent by this launch, as when the stream refuses the task */
            registry_remove(executor);
            quarantine_push(executor);
        }
        pthread_mutex_unlock(&g_lock);
        return pa_fail_oom(ACLNN_ERR_INNER_NULLPTR, op->name, "the launch");
    }
    task->op = op;
    task->workspace = workspace;
    task->workspace_size = workspace_size;
    task->workspace_need = executor->workspace_size;
    task->n_in = executor->n_in;
    task->n_out = executor->n_out;
    for (int i = 0; i < executor->n_in; i++) task->views[i] = executor->in_views[i];
    for (int i = 0; i < executor->n_out; i++) task->views[executor->n_in + i] = executor->out_views[i];
    if (executor->plan_size > 0) memcpy(task->plan, executor->plan, executor->plan_size);
    if (!executor->repeatable) {
        /* spent from here on, whether or not the stream accepts the task */
        registry_remove(executor);
        quarantine_push(executor);
    }
    pthread_mutex_unlock(&g_lock);
    rc = pa_stream_submit(stream, run_task, free_task, task);
    if (rc == ACL_SUCCESS) return ACLNN_SUCCESS;
    /* The runtime's message, under the op's name; out of host memory is the
     * op's own code, whichever allocation failed. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", pa_get_errmsg());
    return pa_fail(rc == ACL_ERROR_BAD_ALLOC ? ACLNN_ERR_INNER_NULLPTR : rc, "%s: %s", op->name, msg);
}

/* ---- public executor API ---- */

PA_API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == NULL) {
        return pa_fail(ACLNN_ERR_PARAM_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is NULL");
    }
    pthread_mutex_lock(&g_lock);
    int rc = check_live("aclSetAclOpExecutorRepeatable", executor);
    if (rc == 0) executor->repeatable = true;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

PA_API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (executor == NULL) return ACLNN_SUCCESS;
    pthread_mutex_lock(&g_lock);
    if (!registry_has(executor)) {
        const bool spent = quarantine_has(executor);
        pthread_mutex_unlock(&g_lock);
        if (spent) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID,
                           "aclDestroyAclOpExecutor: executor was already released by its launch (it was not "
                           "made repeatable with aclSetAclOpExecutorRepeatable)");
        }
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor: executor %p is not a live executor",
                       (void *)executor);
    }
    registry_remove(executor);
    executor->magic = 0;
    pthread_mutex_unlock(&g_lock);
    free(executor);
    return ACLNN_SUCCESS;
}

enum addr_kind { ADDR_INPUT, ADDR_OUTPUT, ADDR_ANY };

static aclnnStatus set_addr(const char *api, aclOpExecutor *ex, enum addr_kind kind, size_t index,
                            aclTensor *tensor, void *addr) {
    if (ex == NULL) return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: executor is NULL", api);
    if (tensor != NULL) {
        int trc = pa_handle_check(api, "tensor", tensor, PA_HANDLE_TENSOR);
        if (trc != 0) return trc;
    }
    pthread_mutex_lock(&g_lock);
    int rc = check_live(api, ex);
    if (rc != 0) {
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    size_t off = SIZE_MAX;
    bool in_range = false;
    if (kind == ADDR_INPUT || kind == ADDR_ANY) {
        if (index < (size_t)ex->n_in) {
            off = ex->in_views[index];
            in_range = true;
        }
    }
    if (kind == ADDR_OUTPUT) {
        if (index < (size_t)ex->n_out) {
            off = ex->out_views[index];
            in_range = true;
        }
    } else if (kind == ADDR_ANY && !in_range && index - (size_t)ex->n_in < (size_t)ex->n_out) {
        off = ex->out_views[index - (size_t)ex->n_in];
        in_range = true;
    }
    if (!in_range) {
        const int n_in = ex->n_in, n_out = ex->n_out;
        pthread_mutex_unlock(&g_lock);
        if (kind == ADDR_INPUT) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index must be below the op's %d inputs, got %zu", api,
                           n_in, index);
        }
        if (kind == ADDR_OUTPUT) {
            return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: index must be below the op's %d outputs, got %zu", api,
                           n_out, index);
        }
        return pa_fail(ACLNN_ERR_PARAM_INVALID,
                       "%s: index must be below the op's %d tensors (%d inputs, then %d outputs), got %zu", api,
                       n_in + n_out, n_in, n_out, index);
    }
    if (off == SIZE_MAX) {
        pthread_mutex_unlock(&g_lock);
        return pa_fail(ACLNN_ERR_PARAM_INVALID, "%s: tensor %zu is an optional tensor that was not given", api,
                       index);
    }
    memcpy((char *)ex->plan + off + offsetof(pa_tview, base), &addr, sizeof addr);
    if (tensor != NULL) tensor->data = addr;
    pthread_mutex_unlock(&g_lock);
    return ACLNN_SUCCESS;
}

PA_API aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                         void *addr) {
    return set_addr("aclSetInputTensorAddr", executor, ADDR_INPUT, index, tensor, addr);
}

PA_API aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                          void *addr) {
    return set_addr("aclSetOutputTensorAddr", executor, ADDR_OUTPUT, index, tensor, addr);
}

PA_API aclnnStatus aclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("aclSetTensorAddr", executor, ADDR_ANY, index, tensor, addr);
}

static aclnnStatus set_dynamic_addr(const char *api, aclOpExecutor *executor) {
    if (executor == NULL) return pa_fail(ACLNN_ERR_INNER_NULLPTR, "%s: executor is NULL", api);
    return pa_fail(ACLNN_ERR_PARAM_INVALID,
                   "%s: the op has no dynamic (tensor-list) inputs or outputs; use aclSetInputTensorAddr / "
                   "aclSetOutputTensorAddr",
                   api);
}

PA_API aclnnStatus aclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                                aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("aclSetDynamicInputTensorAddr", executor);
}

PA_API aclnnStatus aclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                 const size_t relativeIndex, aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("aclSetDynamicOutputTensorAddr", executor);
}

PA_API aclnnStatus aclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                           aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("aclSetDynamicTensorAddr", executor);
}

/* Older capitalised spellings. */
PA_API aclnnStatus AclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                         void *addr) {
    return set_addr("AclSetInputTensorAddr", executor, ADDR_INPUT, index, tensor, addr);
}

PA_API aclnnStatus AclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor,
                                          void *addr) {
    return set_addr("AclSetOutputTensorAddr", executor, ADDR_OUTPUT, index, tensor, addr);
}

PA_API aclnnStatus AclSetTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) {
    return set_addr("AclSetTensorAddr", executor, ADDR_ANY, index, tensor, addr);
}

PA_API aclnnStatus AclSetDynamicInputTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                                aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("AclSetDynamicInputTensorAddr", executor);
}

PA_API aclnnStatus AclSetDynamicOutputTensorAddr(aclOpExecutor *executor, size_t irIndex,
                                                 const size_t relativeIndex, aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("AclSetDynamicOutputTensorAddr", executor);
}

PA_API aclnnStatus AclSetDynamicTensorAddr(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex,
                                           aclTensorList *tensors, void *addr) {
    PA_UNUSED(irIndex), PA_UNUSED(relativeIndex), PA_UNUSED(tensors), PA_UNUSED(addr);
    return set_dynamic_addr("AclSetDynamicTensorAddr", executor);
}

/* ---- aclnnInit / aclnnFinalize ---- */

/* Nothing to load: ops are built in. May be called any number of times. */
PA_API aclnnStatus aclnnInit(const char *configPath) {
    PA_UNUSED(configPath);
    return ACLNN_SUCCESS;
}

/* Frees the quarantined (spent) executors and destroyed handles; live ones stay valid. */
PA_API aclnnStatus aclnnFinalize(void) {
    pthread_mutex_lock(&g_lock);
    quarantine_drain();
    pthread_mutex_unlock(&g_lock);
    pa_handles_drain();
    return ACLNN_SUCCESS;
}
