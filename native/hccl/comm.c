/* Communicators: root info and rendezvous, creation (root info, all devices
 * of this process, rank table), queries, destruction, configuration, errors,
 * and groups (HcclGroupStart / End). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/random.h>
#include <unistd.h>

#include "hccl/pa_hccl.h"
#include "hccl/pa_store.h"
#include "runtime/pa_device.h"
#include "runtime/pa_rt_base.h"

#define PA_HCOMM_MAGIC 0x48636f6du /* "Hcom" */
#define ROOT_MAGIC "PAHCCL1"

/* ---------------------------------------------------------------------------
 * Errors and settings
 * ------------------------------------------------------------------------- */

HcclResult pa_hccl_fail(HcclResult rc, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pa_set_errmsg_raw(buf);
    return rc;
}

/* A whole number of seconds from the environment, or `def`. */
static int64_t env_seconds(const char *name, int64_t def) {
    const char *s = getenv(name);
    if (s == NULL || s[0] == '\0') return def;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1000000000LL) {
        fprintf(stderr, "pyaclnn: warning: ignoring %s=\"%s\" (expected seconds >= 0); using %lld\n", name, s,
                (long long)def);
        return def;
    }
    return (int64_t)v;
}

int64_t pa_hccl_connect_timeout_ms(void) {
    int64_t s = env_seconds("HCCL_CONNECT_TIMEOUT", 120);
    return (s > 0 ? s : 120) * 1000;
}

/* 0 means no limit, as in CANN. */
int64_t pa_hccl_exec_timeout_ms(void) { return env_seconds("HCCL_EXEC_TIMEOUT", 1836) * 1000; }

PA_API const char *HcclGetErrorString(HcclResult code) {
    switch (code) {
    case HCCL_SUCCESS: return "success";
    case HCCL_E_PARA: return "parameter error";
    case HCCL_E_PTR: return "empty pointer";
    case HCCL_E_MEMORY: return "memory error";
    case HCCL_E_INTERNAL: return "internal error";
    case HCCL_E_NOT_SUPPORT: return "not support feature";
    case HCCL_E_NOT_FOUND: return "not found specific resource";
    case HCCL_E_UNAVAIL: return "resource unavailable";
    case HCCL_E_SYSCALL: return "call system interface error";
    case HCCL_E_TIMEOUT: return "timeout";
    case HCCL_E_OPEN_FILE_FAILURE: return "open file fail";
    case HCCL_E_TCP_CONNECT: return "tcp connect fail";
    case HCCL_E_ROCE_CONNECT: return "roce connect fail";
    case HCCL_E_TCP_TRANSFER: return "tcp transfer fail";
    case HCCL_E_ROCE_TRANSFER: return "roce transfer fail";
    case HCCL_E_RUNTIME: return "call runtime api fail";
    case HCCL_E_DRV: return "call driver api fail";
    case HCCL_E_PROFILING: return "call profiling api fail";
    case HCCL_E_CCE: return "call cce api fail";
    case HCCL_E_NETWORK: return "call network api fail";
    case HCCL_E_AGAIN: return "try again";
    case HCCL_E_REMOTE: return "error cqe";
    case HCCL_E_SUSPENDING: return "error communicator suspending";
    case HCCL_E_OPRETRY_FAIL: return "retry constraint";
    case HCCL_E_OOM: return "out of memory";
    default: return "unknown error";
    }
}

/* Process-wide options: only the deterministic flag exists; our reductions
 * are always deterministic, so it is stored and reported. */
static _Atomic int32_t g_deterministic;

PA_API HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue) {
    if (config != HCCL_DETERMINISTIC) {
        return pa_hccl_fail(HCCL_E_PARA, "HcclSetConfig: config must be HCCL_DETERMINISTIC (0), got %d", (int)config);
    }
    if (configValue.value < 0 || configValue.value > 2) {
        return pa_hccl_fail(HCCL_E_PARA, "HcclSetConfig: the HCCL_DETERMINISTIC value must be 0, 1 or 2, got %d",
                            (int)configValue.value);
    }
    g_deterministic = configValue.value;
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue) {
    if (configValue == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetConfig: configValue must not be NULL");
    if (config != HCCL_DETERMINISTIC) {
        return pa_hccl_fail(HCCL_E_PARA, "HcclGetConfig: config must be HCCL_DETERMINISTIC (0), got %d", (int)config);
    }
    configValue->value = g_deterministic;
    return HCCL_SUCCESS;
}

/* Every field of HcclCommConfig is accepted (most change nothing here). */
PA_API uint32_t HcclGetCommConfigCapability(void) { return HCCL_COMM_CONFIG_RESERVED; }

/* ---------------------------------------------------------------------------
 * Registry of live communicators
 * ------------------------------------------------------------------------- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pa_hcomm *g_comms; /* guarded by g_mu, as are every comm's refs */

HcclResult pa_hcomm_acquire(HcclComm comm, const char *api, pa_hcomm **out) {
    if (comm == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: comm must not be NULL", api);
    pthread_mutex_lock(&g_mu);
    pa_hcomm *c = g_comms;
    while (c != NULL && c != comm) c = c->next;
    if (c != NULL) c->refs++;
    pthread_mutex_unlock(&g_mu);
    if (c == NULL) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: comm %p is not a live communicator (destroyed, or never created)",
                            api, comm);
    }
    *out = c;
    return HCCL_SUCCESS;
}

static void comm_free(pa_hcomm *c) {
    if (c->ops != NULL) c->ops->leave(c->eng, c->rank);
    pthread_mutex_destroy(&c->mu);
    free(c->send_seq);
    free(c->recv_seq);
    c->magic = 0;
    free(c);
}

void pa_hcomm_release(pa_hcomm *c) {
    pthread_mutex_lock(&g_mu);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&g_mu);
    if (last) comm_free(c);
}

void pa_hcomm_note_async(pa_hcomm *c, HcclResult rc, const char *msg) {
    pthread_mutex_lock(&c->mu);
    if (c->async_err == HCCL_SUCCESS) {
        c->async_err = rc;
        snprintf(c->async_msg, sizeof c->async_msg, "%s", msg ? msg : "");
    }
    pthread_mutex_unlock(&c->mu);
}

static pa_hcomm *comm_new(uint32_t rank, uint32_t size, int device, const char *name) {
    pa_hcomm *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->send_seq = calloc(size, sizeof *c->send_seq);
    c->recv_seq = calloc(size, sizeof *c->recv_seq);
    if (c->send_seq == NULL || c->recv_seq == NULL) {
        free(c->send_seq);
        free(c->recv_seq);
        free(c);
        return NULL;
    }
    c->magic = PA_HCOMM_MAGIC;
    c->rank = rank;
    c->size = size;
    c->device = device;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->exec_timeout_ms = pa_hccl_exec_timeout_ms();
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->send_seq);
        free(c->recv_seq);
        free(c);
        return NULL;
    }
    c->refs = 1; /* the handle */
    return c;
}

static void comm_register(pa_hcomm *c) {
    pthread_mutex_lock(&g_mu);
    c->next = g_comms;
    g_comms = c;
    pthread_mutex_unlock(&g_mu);
}

PA_API HcclResult HcclCommDestroy(HcclComm comm) {
    if (comm == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclCommDestroy: comm must not be NULL");
    pthread_mutex_lock(&g_mu);
    pa_hcomm **pp = &g_comms;
    while (*pp != NULL && *pp != comm) pp = &(*pp)->next;
    pa_hcomm *c = *pp;
    if (c != NULL) *pp = c->next;
    pthread_mutex_unlock(&g_mu);
    if (c == NULL) {
        return pa_hccl_fail(HCCL_E_PARA, "HcclCommDestroy: comm %p is not a live communicator (destroyed already?)",
                            comm);
    }
    pa_hcomm_release(c); /* queued work keeps it alive until it ran */
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize) {
    if (rankSize == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetRankSize: rankSize must not be NULL");
    pa_hcomm *c = NULL;
    HcclResult rc = pa_hcomm_acquire(comm, "HcclGetRankSize", &c);
    if (rc != HCCL_SUCCESS) return rc;
    *rankSize = c->size;
    pa_hcomm_release(c);
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank) {
    if (rank == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetRankId: rank must not be NULL");
    pa_hcomm *c = NULL;
    HcclResult rc = pa_hcomm_acquire(comm, "HcclGetRankId", &c);
    if (rc != HCCL_SUCCESS) return rc;
    *rank = c->rank;
    pa_hcomm_release(c);
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclGetCommName(HcclComm comm, char *commName) {
    if (commName == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetCommName: commName must not be NULL");
    pa_hcomm *c = NULL;
    HcclResult rc = pa_hcomm_acquire(comm, "HcclGetCommName", &c);
    if (rc != HCCL_SUCCESS) return rc;
    snprintf(commName, COMM_NAME_MAX_LENGTH, "%s", c->name);
    pa_hcomm_release(c);
    return HCCL_SUCCESS;
}

/* Several ranks of one process share a name; the one on the calling thread's
 * device is preferred. */
PA_API HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm) {
    if (commName == NULL || comm == NULL) {
        return pa_hccl_fail(HCCL_E_PTR, "HcclCommGetHandleWithName: commName and comm must not be NULL");
    }
    const int dev = pa_device_current();
    pa_hcomm *found = NULL;
    pthread_mutex_lock(&g_mu);
    for (pa_hcomm *c = g_comms; c != NULL; c = c->next) {
        if (strncmp(c->name, commName, sizeof c->name) != 0) continue;
        if (found == NULL || c->device == dev) found = c;
    }
    pthread_mutex_unlock(&g_mu);
    if (found == NULL) {
        return pa_hccl_fail(HCCL_E_NOT_FOUND, "HcclCommGetHandleWithName: no live communicator is named \"%.128s\"",
                            commName);
    }
    *comm = found;
    return HCCL_SUCCESS;
}

PA_API HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError) {
    if (asyncError == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetCommAsyncError: asyncError must not be NULL");
    pa_hcomm *c = NULL;
    HcclResult rc = pa_hcomm_acquire(comm, "HcclGetCommAsyncError", &c);
    if (rc != HCCL_SUCCESS) return rc;
    pthread_mutex_lock(&c->mu);
    *asyncError = c->async_err;
    if (c->async_err != HCCL_SUCCESS) pa_set_errmsg_raw(c->async_msg);
    pthread_mutex_unlock(&c->mu);
    pa_hcomm_release(c);
    return HCCL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Root info
 * ------------------------------------------------------------------------- */

typedef struct root_info {
    char magic[8];
    uint8_t session[16];
    char host[64];
    uint16_t port;
    uint16_t reserved;
    uint32_t pid;
} root_info;

_Static_assert(sizeof(root_info) <= HCCL_ROOT_INFO_BYTES, "root info fits");

static void random_session(uint8_t session[16]) {
    if (getrandom(session, 16, 0) != 16) {
        uint64_t t = pa_rt_now_ns(), tok = pa_store_process_token();
        memcpy(session, &t, 8);
        memcpy(session + 8, &tok, 8);
    }
}

PA_API HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
    if (rootInfo == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclGetRootInfo: rootInfo must not be NULL");
    root_info ri;
    memset(&ri, 0, sizeof ri);
    memcpy(ri.magic, ROOT_MAGIC, sizeof ROOT_MAGIC);
    random_session(ri.session);
    char msg[PA_HCCL_MSG_CAP];
    HcclResult rc = pa_store_serve(ri.session, ri.host, &ri.port, msg, sizeof msg);
    if (rc != HCCL_SUCCESS) return pa_hccl_fail(rc, "HcclGetRootInfo: cannot start the rendezvous store: %s", msg);
    ri.pid = (uint32_t)getpid();
    memset(rootInfo, 0, sizeof *rootInfo);
    memcpy(rootInfo->internal, &ri, sizeof ri);
    return HCCL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------- */

/* The config fields that lie within the caller's `size` (older headers are shorter). */
static HcclResult read_config(const char *api, const HcclCommConfig *config, char *name, int64_t *exec_ms) {
    if (config == NULL) return HCCL_SUCCESS;
    size_t size;
    uint32_t magic;
    memcpy(&size, config->reserved, sizeof size);
    memcpy(&magic, config->reserved + sizeof size, sizeof magic);
    if (magic != HCCL_COMM_CONFIG_MAGIC_WORD) {
        return pa_hccl_fail(HCCL_E_PARA,
                            "%s: config has magic word 0x%x, expected 0x%x: initialise it with HcclCommConfigInit", api,
                            (unsigned)magic, (unsigned)HCCL_COMM_CONFIG_MAGIC_WORD);
    }
#define HAS(field) (offsetof(HcclCommConfig, field) + sizeof config->field <= size)
    if (HAS(hcclCommName) && config->hcclCommName[0] != '\0') {
        if (memchr(config->hcclCommName, '\0', sizeof config->hcclCommName) == NULL) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: config->hcclCommName is not NUL-terminated within %u bytes", api,
                                (unsigned)COMM_NAME_MAX_LENGTH);
        }
        snprintf(name, COMM_NAME_MAX_LENGTH, "%s", config->hcclCommName);
    }
    if (HAS(hcclExecTimeOut) && config->hcclExecTimeOut != HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET) {
        if (config->hcclExecTimeOut < 0) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: config->hcclExecTimeOut must be >= 0 seconds, got %d", api,
                                (int)config->hcclExecTimeOut);
        }
        *exec_ms = (int64_t)config->hcclExecTimeOut * 1000;
    }
#undef HAS
    return HCCL_SUCCESS;
}

static HcclResult current_device(const char *api, int *dev) {
    *dev = pa_device_current();
    if (*dev < 0) return pa_hccl_fail(HCCL_E_RUNTIME, "%s: no device set on this thread: call aclrtSetDevice first", api);
    return HCCL_SUCCESS;
}

static void session_name(const uint8_t session[16], char *name) {
    snprintf(name, COMM_NAME_MAX_LENGTH, "hccl_%02x%02x%02x%02x%02x%02x%02x%02x", session[0], session[1], session[2],
             session[3], session[4], session[5], session[6], session[7]);
}

/* Joins `session` through the store at host:port and sets up the engine.
 * root_pid: the process that made the root info (0: unknown). */
static HcclResult join(const char *api, const uint8_t session[16], const char *host, uint16_t port, uint32_t nRanks,
                       uint32_t rank, uint32_t root_pid, const HcclCommConfig *config, HcclComm *comm) {
    int dev = -1;
    HcclResult rc = current_device(api, &dev);
    if (rc != HCCL_SUCCESS) return rc;
    char why[PA_HCCL_MSG_CAP];
    const bool gloo = pa_gloo_available(why, sizeof why);
    if (root_pid != 0 && root_pid != (uint32_t)getpid() && !gloo) {
        return pa_hccl_fail(HCCL_E_NOT_SUPPORT, "%s: rank %u: the root info comes from another process (pid %u): %s",
                            api, rank, root_pid, why);
    }
    char name[COMM_NAME_MAX_LENGTH];
    session_name(session, name);
    int64_t exec_ms = pa_hccl_exec_timeout_ms();
    rc = read_config(api, config, name, &exec_ms);
    if (rc != HCCL_SUCCESS) return rc;
    const int64_t connect_ms = pa_hccl_connect_timeout_ms();
    char msg[PA_HCCL_MSG_CAP];
    pa_store_client *st = NULL;
    rc = pa_store_connect(host, port, connect_ms, &st, msg, sizeof msg);
    if (rc != HCCL_SUCCESS) return pa_hccl_fail(rc, "%s: rank %u: %s", api, rank, msg);
    bool one_process = false;
    rc = pa_store_join(st, session, nRanks, rank, connect_ms, &one_process, msg, sizeof msg);
    if (rc != HCCL_SUCCESS) {
        pa_store_close(st);
        char hint[PA_HCCL_MSG_CAP + 64] = "";
        if (rc == HCCL_E_TIMEOUT && !gloo) snprintf(hint, sizeof hint, " (ranks in other processes cannot join: %s)", why);
        return pa_hccl_fail(rc, "%s: rank %u of %u: %s%s", api, rank, nRanks, msg, hint);
    }
    pa_hcomm *c = comm_new(rank, nRanks, dev, name);
    if (c == NULL) {
        pa_store_close(st);
        return pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
    }
    c->exec_timeout_ms = exec_ms;
    if (one_process) {
        c->ops = &pa_engine_local;
        c->eng = pa_local_join(session, nRanks, rank);
        if (c->eng == NULL) rc = pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
    } else {
        c->ops = &pa_engine_gloo;
        c->eng = pa_gloo_join(st, nRanks, rank, connect_ms, &rc, msg, sizeof msg);
        if (c->eng == NULL) rc = pa_hccl_fail(rc, "%s: rank %u of %u: %s", api, rank, nRanks, msg);
    }
    pa_store_close(st);
    if (rc != HCCL_SUCCESS) {
        c->ops = NULL;
        comm_free(c);
        return rc;
    }
    comm_register(c);
    *comm = c;
    return HCCL_SUCCESS;
}

static HcclResult init_root_info(const char *api, uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                 const HcclCommConfig *config, HcclComm *comm) {
    if (rootInfo == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: rootInfo must not be NULL", api);
    if (comm == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: comm must not be NULL", api);
    if (nRanks == 0 || nRanks > PA_HCCL_MAX_RANKS) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: nRanks must be in [1, %u], got %u", api, (unsigned)PA_HCCL_MAX_RANKS,
                            nRanks);
    }
    if (rank >= nRanks) return pa_hccl_fail(HCCL_E_PARA, "%s: rank must be below nRanks (%u), got %u", api, nRanks, rank);
    root_info ri;
    memcpy(&ri, rootInfo->internal, sizeof ri);
    if (memcmp(ri.magic, ROOT_MAGIC, sizeof ROOT_MAGIC) != 0 || memchr(ri.host, '\0', sizeof ri.host) == NULL) {
        return pa_hccl_fail(HCCL_E_PARA,
                            "%s: rootInfo was not made by HcclGetRootInfo (pass every rank the bytes rank 0 got)", api);
    }
    return join(api, ri.session, ri.host, ri.port, nRanks, rank, ri.pid, config, comm);
}

PA_API HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm) {
    return init_root_info("HcclCommInitRootInfo", nRanks, rootInfo, rank, NULL, comm);
}

PA_API HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                             const HcclCommConfig *config, HcclComm *comm) {
    if (config == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclCommInitRootInfoConfig: config must not be NULL");
    return init_root_info("HcclCommInitRootInfoConfig", nRanks, rootInfo, rank, config, comm);
}

PA_API HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms) {
    const char *api = "HcclCommInitAll";
    if (devices == NULL || comms == NULL) return pa_hccl_fail(HCCL_E_PTR, "%s: devices and comms must not be NULL", api);
    if (ndev == 0 || ndev > (uint32_t)pa_device_count()) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: ndev must be in [1, %d] (the device count), got %u", api,
                            pa_device_count(), ndev);
    }
    for (uint32_t i = 0; i < ndev; i++) {
        if (devices[i] < 0 || devices[i] >= pa_device_count()) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: devices[%u] = %d is not a device (0..%d)", api, i, (int)devices[i],
                                pa_device_count() - 1);
        }
        for (uint32_t j = 0; j < i; j++) {
            if (devices[j] == devices[i]) {
                return pa_hccl_fail(HCCL_E_PARA, "%s: devices[%u] and devices[%u] are both device %d", api, j, i,
                                    (int)devices[i]);
            }
        }
    }
    uint8_t session[16];
    random_session(session);
    char name[COMM_NAME_MAX_LENGTH];
    session_name(session, name);
    for (uint32_t i = 0; i < ndev; i++) {
        pa_hcomm *c = comm_new(i, ndev, devices[i], name);
        void *eng = c != NULL ? pa_local_join(session, ndev, i) : NULL;
        if (eng == NULL) {
            if (c != NULL) comm_free(c);
            for (uint32_t j = 0; j < i; j++) HcclCommDestroy(comms[j]);
            return pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
        }
        c->ops = &pa_engine_local;
        c->eng = eng;
        comm_register(c);
        comms[i] = c;
    }
    return HCCL_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Rank tables: {"server_list": [{"server_id": "...", "device": [{"device_id":
 * "0", "rank_id": "0", ...}, ...]}, ...], ...}. The ranks meet at the store
 * rank 0 serves on HCCL_IF_IP (default 127.0.0.1) : HCCL_IF_BASE_PORT
 * (default 60000); the session is the file's contents.
 * ------------------------------------------------------------------------- */

/* Counts the "rank_id" entries and checks that they are 0..n-1. */
static HcclResult parse_rank_table(const char *api, const char *text, uint32_t *n) {
    uint32_t count = 0;
    uint64_t seen[PA_HCCL_MAX_RANKS / 64] = {0};
    for (const char *p = strstr(text, "\"rank_id\""); p != NULL; p = strstr(p + 1, "\"rank_id\"")) {
        const char *q = p + 9;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r' || *q == ':' || *q == '"') q++;
        if (!isdigit((unsigned char)*q)) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: a \"rank_id\" of the rank table has no number", api);
        }
        unsigned long v = strtoul(q, NULL, 10);
        if (v >= PA_HCCL_MAX_RANKS || (seen[v / 64] >> (v % 64) & 1u)) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: rank_id %lu of the rank table is out of range or repeated", api, v);
        }
        seen[v / 64] |= (uint64_t)1 << (v % 64);
        count++;
    }
    if (count == 0) return pa_hccl_fail(HCCL_E_PARA, "%s: the rank table lists no \"rank_id\"", api);
    for (uint32_t r = 0; r < count; r++) {
        if (!(seen[r / 64] >> (r % 64) & 1u)) {
            return pa_hccl_fail(HCCL_E_PARA, "%s: the rank table's rank_ids are not 0..%u (%u is missing)", api,
                                count - 1, r);
        }
    }
    *n = count;
    return HCCL_SUCCESS;
}

static HcclResult init_cluster(const char *api, const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                               HcclComm *comm) {
    if (clusterInfo == NULL || comm == NULL) {
        return pa_hccl_fail(HCCL_E_PTR, "%s: clusterInfo and comm must not be NULL", api);
    }
    FILE *f = fopen(clusterInfo, "rb");
    if (f == NULL) {
        return pa_hccl_fail(HCCL_E_OPEN_FILE_FAILURE, "%s: cannot open the rank table \"%s\": %s", api, clusterInfo,
                            strerror(errno));
    }
    char *text = malloc(1 << 20);
    size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (text == NULL) return pa_hccl_fail(HCCL_E_MEMORY, "%s: out of host memory", api);
    text[len] = '\0';
    uint32_t n = 0;
    HcclResult rc = parse_rank_table(api, text, &n);
    if (rc == HCCL_SUCCESS && rank >= n) {
        rc = pa_hccl_fail(HCCL_E_PARA, "%s: rank must be below the rank table's %u ranks, got %u", api, n, rank);
    }
    uint8_t session[16] = {0};
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the contents: the same on every rank */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    free(text);
    if (rc != HCCL_SUCCESS) return rc;
    memcpy(session, "ranktabl", 8);
    memcpy(session + 8, &h, 8);
    const char *ip = getenv("HCCL_IF_IP");
    char host[64];
    snprintf(host, sizeof host, "%s", (ip != NULL && ip[0] != '\0') ? ip : "127.0.0.1");
    const int64_t base = getenv("HCCL_IF_BASE_PORT") != NULL ? atoll(getenv("HCCL_IF_BASE_PORT")) : 60000;
    if (base <= 0 || base > 65535) {
        return pa_hccl_fail(HCCL_E_PARA, "%s: HCCL_IF_BASE_PORT must be a TCP port, got %lld", api, (long long)base);
    }
    if (rank == 0) {
        char msg[PA_HCCL_MSG_CAP];
        rc = pa_store_serve_at(session, host, (uint16_t)base, msg, sizeof msg);
        if (rc != HCCL_SUCCESS) {
            return pa_hccl_fail(rc, "%s: rank 0 cannot serve the rendezvous at %s:%lld (HCCL_IF_IP, "
                                    "HCCL_IF_BASE_PORT): %s", api, host, (long long)base, msg);
        }
    }
    return join(api, session, host, (uint16_t)base, n, rank, 0, config, comm);
}

PA_API HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm) {
    return init_cluster("HcclCommInitClusterInfo", clusterInfo, rank, NULL, comm);
}

PA_API HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                                                HcclComm *comm) {
    if (config == NULL) return pa_hccl_fail(HCCL_E_PTR, "HcclCommInitClusterInfoConfig: config must not be NULL");
    return init_cluster("HcclCommInitClusterInfoConfig", clusterInfo, rank, config, comm);
}

PA_API HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
                                          uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm) {
    PA_UNUSED(comm), PA_UNUSED(rankNum), PA_UNUSED(rankIds), PA_UNUSED(subCommId), PA_UNUSED(subCommRankId);
    PA_UNUSED(config), PA_UNUSED(subComm);
    return pa_hccl_fail(HCCL_E_NOT_SUPPORT,
                        "HcclCreateSubCommConfig is not supported by pyaclnn: create the sub-communicator with "
                        "HcclGetRootInfo + HcclCommInitRootInfo");
}

/* ---------------------------------------------------------------------------
 * Groups: the calling thread's deferred operations.
 * ------------------------------------------------------------------------- */

typedef struct deferred {
    pa_coll *op;
    aclrtStream stream;
} deferred;

/* A thread's open group (one pointer of thread-local storage; the state is
 * allocated by HcclGroupStart and freed by the outermost HcclGroupEnd). */
typedef struct group_state {
    int depth;
    deferred *ops;
    size_t n, cap;
} group_state;

static PA_THREAD_LOCAL group_state *tl_group;

bool pa_group_defer(pa_coll *op, aclrtStream stream) {
    group_state *g = tl_group;
    if (g == NULL) return false;
    if (g->n == g->cap) {
        size_t ncap = g->cap ? g->cap * 2 : 16;
        deferred *p = realloc(g->ops, ncap * sizeof *p);
        if (p == NULL) return false; /* run it now instead */
        g->ops = p;
        g->cap = ncap;
    }
    g->ops[g->n++] = (deferred){op, stream};
    return true;
}

PA_API HcclResult HcclGroupStart(void) {
    if (tl_group == NULL) {
        tl_group = calloc(1, sizeof *tl_group);
        if (tl_group == NULL) return pa_hccl_fail(HCCL_E_MEMORY, "HcclGroupStart: out of host memory");
    }
    tl_group->depth++;
    return HCCL_SUCCESS;
}

static bool is_p2p(const pa_coll *op) { return op->kind == PA_SEND || op->kind == PA_RECV || op->kind == PA_BATCH; }

/* Appends op's sends / receives to batch b (op is consumed). */
static bool batch_append(pa_coll *b, pa_coll *op) {
    uint32_t add = op->kind == PA_BATCH ? op->nitems : 1;
    HcclSendRecvItem *items = realloc(b->items, (b->nitems + add) * sizeof *items);
    if (items == NULL) return false;
    b->items = items;
    if (op->kind == PA_BATCH) {
        memcpy(items + b->nitems, op->items, op->nitems * sizeof *items);
    } else {
        items[b->nitems] = (HcclSendRecvItem){op->kind == PA_SEND ? HCCL_SEND : HCCL_RECV,
                                              op->kind == PA_SEND ? op->send : op->recv, op->count, op->dt, op->root};
    }
    b->nitems += add;
    pa_coll_free(op);
    return true;
}

PA_API HcclResult HcclGroupEnd(void) {
    group_state *g = tl_group;
    if (g == NULL) return pa_hccl_fail(HCCL_E_PARA, "HcclGroupEnd: no HcclGroupStart is open on this thread");
    if (--g->depth > 0) return HCCL_SUCCESS;
    tl_group = NULL; /* what follows is queued at once */
    HcclResult first = HCCL_SUCCESS;
    char msg[1024] = "";
    size_t i = 0;
    while (i < g->n) {
        pa_coll *op = g->ops[i].op;
        aclrtStream stream = g->ops[i].stream;
        i++;
        if (is_p2p(op)) {
            /* the run of sends / receives on this comm and stream: one batch */
            pa_coll *b = calloc(1, sizeof *b);
            bool ok = b != NULL;
            if (ok) {
                *b = (pa_coll){PA_BATCH, "HcclGroupEnd", op->comm, op->dt, op->op, 0, NULL, NULL, 0, 0, NULL, NULL, 0};
                op->comm = NULL; /* the batch takes the reference */
                ok = batch_append(b, op);
                while (ok && i < g->n && is_p2p(g->ops[i].op) && g->ops[i].stream == stream &&
                       g->ops[i].op->comm == b->comm) {
                    pa_coll *next = g->ops[i++].op;
                    pa_hcomm_release(next->comm);
                    next->comm = NULL;
                    ok = batch_append(b, next);
                }
            }
            if (!ok) {
                if (b != NULL) pa_coll_free(b);
                else pa_coll_free(op);
                if (first == HCCL_SUCCESS) {
                    first = pa_hccl_fail(HCCL_E_MEMORY, "HcclGroupEnd: out of host memory");
                    snprintf(msg, sizeof msg, "%s", pa_get_errmsg());
                }
                continue;
            }
            op = b;
        }
        HcclResult rc = pa_coll_submit(op, stream);
        if (rc != HCCL_SUCCESS && first == HCCL_SUCCESS) {
            first = rc;
            snprintf(msg, sizeof msg, "%s", pa_get_errmsg());
        }
    }
    free(g->ops);
    free(g);
    if (first != HCCL_SUCCESS) pa_set_errmsg_raw(msg);
    return first;
}
