/* The cross-process engine: the ranks are processes; gloo (through the bridge
 * library libhccl_gloo.so, loaded on first use from the directory of this
 * library, or from PYACLNN_GLOO_BRIDGE) connects them with TCP and moves the
 * bytes of each exchange. A transfer that fails (a peer died: its connections
 * closed; or the exec timeout passed) leaves this rank's context unusable, so
 * later operations fail at once with the first error. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccl/gloo/pa_gloo.h"
#include "hccl/pa_hccl.h"
#include "hccl/pa_store.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const pa_gloo_api *g_api;
static char g_why[768];

static void load_bridge(void) {
    Dl_info info;
    char path[4096] = "libhccl_gloo.so";
    if (dladdr((void *)&pa_gloo_available, &info) != 0 && info.dli_fname != NULL) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash != NULL) {
            snprintf(path, sizeof path, "%.*s/libhccl_gloo.so", (int)(slash - info.dli_fname), info.dli_fname);
        }
    }
    const char *env = getenv("PYACLNN_GLOO_BRIDGE"); /* another build of the bridge */
    if (env != NULL && env[0] != '\0') snprintf(path, sizeof path, "%s", env);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(g_why, sizeof g_why,
                 "HCCL across processes needs gloo, and this pyaclnn has no gloo bridge (%s): it was built without "
                 "gloo; install Debian's libgloo-dev and rebuild pyaclnn (pip install .)",
                 dlerror());
        return;
    }
    const pa_gloo_api *(*get)(void) = (const pa_gloo_api *(*)(void))dlsym(h, "pa_gloo_bridge");
    const pa_gloo_api *api = get != NULL ? get() : NULL;
    if (api == NULL || api->abi != PA_GLOO_ABI) {
        snprintf(g_why, sizeof g_why, "%.600s is not a gloo bridge of this pyaclnn (ABI mismatch)", path);
        return;
    }
    g_api = api;
}

bool pa_gloo_available(char *why, size_t cap) {
    pthread_once(&g_once, load_bridge);
    if (g_api == NULL && why != NULL) snprintf(why, cap, "%s", g_why);
    return g_api != NULL;
}

typedef struct member {
    void *ctx;
    uint32_t size;
    pa_gloo_xfer *list; /* 2 * size entries */
    pthread_mutex_t mu;
    HcclResult broken;
    char broken_msg[PA_HCCL_MSG_CAP];
} member;

static int store_set(void *ctx, const char *key, const void *val, size_t len, char *err, size_t cap) {
    HcclResult rc = pa_store_set(ctx, key, val, len, err, cap);
    return rc == HCCL_SUCCESS ? PA_GLOO_OK : rc == HCCL_E_TIMEOUT ? PA_GLOO_TIMEOUT : PA_GLOO_IO;
}

static int store_get(void *ctx, const char *key, void **val, size_t *len, int64_t timeout_ms, char *err, size_t cap) {
    HcclResult rc = pa_store_get(ctx, key, val, len, timeout_ms, err, cap);
    return rc == HCCL_SUCCESS ? PA_GLOO_OK : rc == HCCL_E_TIMEOUT ? PA_GLOO_TIMEOUT : PA_GLOO_IO;
}

void *pa_gloo_join(pa_store_client *st, uint32_t size, uint32_t rank, int64_t timeout_ms, HcclResult *rc, char *msg,
                   size_t cap) {
    if (!pa_gloo_available(msg, cap)) {
        *rc = HCCL_E_NOT_SUPPORT;
        return NULL;
    }
    member *m = calloc(1, sizeof *m);
    if (m != NULL) m->list = calloc(2 * (size_t)size, sizeof *m->list);
    if (m == NULL || m->list == NULL) {
        if (m != NULL) free(m);
        snprintf(msg, cap, "out of host memory");
        *rc = HCCL_E_MEMORY;
        return NULL;
    }
    const char *ip = getenv("HCCL_IF_IP");
    const pa_gloo_store store = {st, store_set, store_get};
    char err[PA_HCCL_MSG_CAP] = "";
    m->ctx = g_api->connect(rank, size, (ip != NULL && ip[0] != '\0') ? ip : "127.0.0.1", &store, timeout_ms, err,
                            sizeof err);
    if (m->ctx == NULL) {
        snprintf(msg, cap, "gloo could not connect the ranks (HCCL_CONNECT_TIMEOUT %lld s): %s",
                 (long long)(timeout_ms / 1000), err);
        free(m->list);
        free(m);
        *rc = HCCL_E_TCP_CONNECT;
        return NULL;
    }
    m->size = size;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        g_api->close(m->ctx);
        free(m->list);
        free(m);
        snprintf(msg, cap, "cannot create a mutex");
        *rc = HCCL_E_SYSCALL;
        return NULL;
    }
    *rc = HCCL_SUCCESS;
    return m;
}

/* Runs sends + recvs (nsend, then nrecv entries of `list`); the first failure
 * breaks the member for good. Caller holds m->mu: one transfer at a time. */
static HcclResult run(member *m, const pa_gloo_xfer *list, uint32_t nsend, uint32_t nrecv, int64_t timeout_ms,
                      const char *what, char *msg, size_t cap) {
    if (m->broken != HCCL_SUCCESS) {
        snprintf(msg, cap, "%s", m->broken_msg);
        return m->broken;
    }
    char err[PA_HCCL_MSG_CAP] = "";
    const int r = g_api->transfer(m->ctx, list, nsend, list + nsend, nrecv, timeout_ms, err, sizeof err);
    if (r == PA_GLOO_OK) return HCCL_SUCCESS;
    const HcclResult rc = r == PA_GLOO_TIMEOUT ? HCCL_E_TIMEOUT : r == PA_GLOO_IO ? HCCL_E_TCP_TRANSFER : HCCL_E_INTERNAL;
    if (r == PA_GLOO_TIMEOUT) {
        snprintf(msg, cap, "%s: a peer did not take part within HCCL_EXEC_TIMEOUT (%lld ms): %s", what,
                 (long long)timeout_ms, err);
    } else if (r == PA_GLOO_IO) {
        snprintf(msg, cap, "%s: the connection to a peer failed (its process died?): %s", what, err);
    } else {
        snprintf(msg, cap, "%s: gloo failed: %s", what, err);
    }
    m->broken = rc;
    snprintf(m->broken_msg, sizeof m->broken_msg, "the communicator failed earlier: %s", msg);
    return rc;
}

static HcclResult gloo_exchange(void *eng, uint32_t rank, uint64_t tag, const pa_xfer *sends, const pa_xfer *recvs,
                                int64_t timeout_ms, char *msg, size_t cap) {
    member *m = eng;
    pthread_mutex_lock(&m->mu);
    uint32_t k = 0;
    for (uint32_t q = 0; q < m->size; q++) {
        if (q != rank && sends[q].bytes) m->list[k++] = (pa_gloo_xfer){q, tag, sends[q].ptr, sends[q].bytes};
    }
    const uint32_t ns = k;
    for (uint32_t q = 0; q < m->size; q++) {
        if (q != rank && recvs[q].bytes) m->list[k++] = (pa_gloo_xfer){q, tag, recvs[q].ptr, recvs[q].bytes};
    }
    HcclResult rc = run(m, m->list, ns, k - ns, timeout_ms, "collective", msg, cap);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

#define P2P_SLOT ((uint64_t)1 << 63) /* collectives use the slots below */

static HcclResult gloo_p2p(void *eng, uint32_t rank, const pa_p2p *items, uint32_t n, int64_t timeout_ms, char *msg,
                           size_t cap) {
    PA_UNUSED(rank);
    member *m = eng;
    pa_gloo_xfer *list = calloc(n ? n : 1, sizeof *list);
    if (list == NULL) {
        snprintf(msg, cap, "out of host memory");
        return HCCL_E_MEMORY;
    }
    uint32_t k = 0;
    for (int pass = 0; pass < 2; pass++) { /* sends first, then receives */
        for (uint32_t i = 0; i < n; i++) {
            if (items[i].send == (pass == 0) && items[i].bytes) {
                list[k++] = (pa_gloo_xfer){items[i].peer, P2P_SLOT | items[i].seq, items[i].ptr, items[i].bytes};
            }
        }
    }
    uint32_t ns = 0;
    for (uint32_t i = 0; i < n; i++) ns += items[i].send && items[i].bytes;
    pthread_mutex_lock(&m->mu);
    HcclResult rc = run(m, list, ns, k - ns, timeout_ms, "send/receive", msg, cap);
    pthread_mutex_unlock(&m->mu);
    free(list);
    return rc;
}

static void gloo_leave(void *eng, uint32_t rank) {
    PA_UNUSED(rank);
    member *m = eng;
    g_api->close(m->ctx);
    pthread_mutex_destroy(&m->mu);
    free(m->list);
    free(m);
}

const pa_engine_ops pa_engine_gloo = {"gloo", gloo_exchange, gloo_p2p, gloo_leave};
