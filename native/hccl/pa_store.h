/* The rendezvous store behind a root info: a small TCP key-value server that
 * the process calling HcclGetRootInfo runs on a thread, and its client.
 * Every rank joins through it (threads of one process too); once all ranks of
 * the session have joined, each learns whether they all live in one process
 * (then they use the in-process engine) or not (then gloo, whose rendezvous
 * keys go through the same store). Messages are length-prefixed, in host byte
 * order (both ends run on one host: TCP on loopback, or HCCL_IF_IP). */
#ifndef PA_STORE_H
#define PA_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hccl/hccl_types.h"

typedef struct pa_store_client pa_store_client;

/* Starts serving `session`; *host (64 bytes) and *port say where. */
HcclResult pa_store_serve(const uint8_t session[16], char *host, uint16_t *port, char *msg, size_t cap);
/* Starts serving `session` at a fixed port (rank tables); HCCL_E_TCP_CONNECT if it is taken. */
HcclResult pa_store_serve_at(const uint8_t session[16], const char *host, uint16_t port, char *msg, size_t cap);

/* Connects (retrying until timeout_ms while nobody listens yet). */
HcclResult pa_store_connect(const char *host, uint16_t port, int64_t timeout_ms, pa_store_client **out, char *msg,
                            size_t cap);
/* Registers rank `rank` of `size` and waits until every rank has joined;
 * *one_process tells whether they all run in this process. */
HcclResult pa_store_join(pa_store_client *c, const uint8_t session[16], uint32_t size, uint32_t rank,
                         int64_t timeout_ms, bool *one_process, char *msg, size_t cap);
HcclResult pa_store_set(pa_store_client *c, const char *key, const void *val, size_t len, char *msg, size_t cap);
/* Waits until `key` is set; *val is malloc'ed. */
HcclResult pa_store_get(pa_store_client *c, const char *key, void **val, size_t *len, int64_t timeout_ms, char *msg,
                        size_t cap);
/* Says goodbye and closes; the server stops once every rank has. */
void pa_store_close(pa_store_client *c);

/* This process's identity (its pid and a random number, renewed after fork). */
uint64_t pa_store_process_token(void);

#endif
