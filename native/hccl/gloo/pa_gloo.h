/* The C interface of the gloo bridge (libhccl_gloo.so, gloo_bridge.cc): gloo
 * connects the ranks (its full mesh of TCP pairs, rendezvous through the
 * caller's key-value store) and moves bytes between them; nothing else.
 * native/hccl/gloo.c loads it with dlopen when a communicator spans processes. */
#ifndef PA_GLOO_H
#define PA_GLOO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PA_GLOO_ABI 1

enum { PA_GLOO_OK = 0, PA_GLOO_TIMEOUT = 1, PA_GLOO_IO = 2, PA_GLOO_ERROR = 3 };

/* The rendezvous store: 0 on success, else a PA_GLOO_* code with err set. */
typedef struct pa_gloo_store {
    void *ctx;
    int (*set)(void *ctx, const char *key, const void *val, size_t len, char *err, size_t cap);
    /* *val is malloc'ed; the caller frees it. */
    int (*get)(void *ctx, const char *key, void **val, size_t *len, int64_t timeout_ms, char *err, size_t cap);
} pa_gloo_store;

/* One transfer with one peer, matched on both sides by (peer, slot). */
typedef struct pa_gloo_xfer {
    uint32_t peer;
    uint64_t slot;
    void *ptr;
    uint64_t bytes;
} pa_gloo_xfer;

typedef struct pa_gloo_api {
    uint32_t abi;
    /* Connects rank `rank` of `size` (TCP on `host`); NULL with err set on failure. */
    void *(*connect)(uint32_t rank, uint32_t size, const char *host, const pa_gloo_store *store, int64_t timeout_ms,
                     char *err, size_t cap);
    /* Posts every send and receive, then waits for all of them (timeout_ms <= 0: no limit). */
    int (*transfer)(void *ctx, const pa_gloo_xfer *sends, uint32_t nsend, const pa_gloo_xfer *recvs, uint32_t nrecv,
                    int64_t timeout_ms, char *err, size_t cap);
    void (*close)(void *ctx);
} pa_gloo_api;

/* The only symbol of libhccl_gloo.so. */
const pa_gloo_api *pa_gloo_bridge(void);

#ifdef __cplusplus
}
#endif

#endif
