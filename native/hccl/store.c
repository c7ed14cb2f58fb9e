/* The rendezvous store (pa_store.h): one server thread accepting, one thread
 * per connection, blocking I/O; the state is shared under one mutex. */
#include "hccl/pa_store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hccl/pa_hccl.h"
#include "runtime/pa_rt_base.h"

#define MSG_MAX ((uint32_t)64 << 20)

enum { T_JOIN = 'J', T_SET = 'S', T_GET = 'G', T_BYE = 'B', T_REPLY = 'R' };

/* ---------------------------------------------------------------------------
 * Framing: u32 length of (type + payload), u8 type, payload.
 * ------------------------------------------------------------------------- */

static bool write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        len -= (size_t)k;
    }
    return true;
}

static bool read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len > 0) {
        ssize_t k = recv(fd, p, len, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        len -= (size_t)k;
    }
    return true;
}

static bool send_msg(int fd, char type, const void *a, size_t alen, const void *b, size_t blen) {
    uint32_t len = (uint32_t)(1 + alen + blen);
    char t = type;
    return write_all(fd, &len, 4) && write_all(fd, &t, 1) && (alen == 0 || write_all(fd, a, alen)) &&
           (blen == 0 || write_all(fd, b, blen));
}

/* *buf is malloc'ed (len bytes after the type). */
static bool recv_msg(int fd, char *type, char **buf, size_t *len) {
    uint32_t n = 0;
    if (!read_all(fd, &n, 4) || n == 0 || n > MSG_MAX) return false;
    char *p = malloc(n);
    if (p == NULL || !read_all(fd, p, n)) {
        free(p);
        return false;
    }
    *type = p[0];
    memmove(p, p + 1, n - 1);
    *buf = p;
    *len = n - 1;
    return true;
}

/* A reply: u32 status, then a payload (or a message when the status is not 0). */
static bool reply(int fd, uint32_t rc, const void *payload, size_t len) {
    return send_msg(fd, T_REPLY, &rc, 4, payload, len);
}

/* ---------------------------------------------------------------------------
 * Server
 * ------------------------------------------------------------------------- */

typedef struct kv {
    char *key;
    void *val;
    size_t len;
    struct kv *next;
} kv;

typedef struct server {
    uint8_t session[16];
    int listen_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t size; /* 0 until the first join */
    uint64_t *tokens;
    bool *joined;
    uint32_t njoined, nbye;
    bool complete, stop;
    kv *kvs;
    int refs; /* the accept thread + connection threads */
    uint64_t created_ns;
} server;

typedef struct conn {
    server *s;
    int fd;
} conn;

static void server_unref(server *s) {
    pthread_mutex_lock(&s->mu);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    while (s->kvs != NULL) {
        kv *k = s->kvs;
        s->kvs = k->next;
        free(k->key);
        free(k->val);
        free(k);
    }
    free(s->tokens);
    free(s->joined);
    pa_rt_sync_destroy(&s->mu, &s->cv, NULL);
    free(s);
}

/* Caller holds s->mu. */
static kv *kv_find(server *s, const char *key) {
    for (kv *k = s->kvs; k != NULL; k = k->next) {
        if (strcmp(k->key, key) == 0) return k;
    }
    return NULL;
}

static int64_t get_i64(const char *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t get_u32(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void handle_join(server *s, int fd, const char *p, size_t len, int *my_rank) {
    char m[PA_HCCL_MSG_CAP] = "";
    uint32_t rc = HCCL_SUCCESS;
    if (len < 40) {
        reply(fd, HCCL_E_INTERNAL, "malformed join", 14);
        return;
    }
    const uint32_t size = get_u32(p + 16), rank = get_u32(p + 20);
    uint64_t token;
    memcpy(&token, p + 24, 8);
    const int64_t timeout_ms = get_i64(p + 32);
    pthread_mutex_lock(&s->mu);
    if (memcmp(p, s->session, 16) != 0) {
        rc = HCCL_E_PARA;
        snprintf(m, sizeof m, "the root info names another communicator than the one served at this address");
    } else if (size == 0 || size > PA_HCCL_MAX_RANKS || rank >= size) {
        rc = HCCL_E_PARA;
        snprintf(m, sizeof m, "rank %u of %u is not a valid rank", rank, size);
    } else if (s->size != 0 && size != s->size) {
        rc = HCCL_E_PARA;
        snprintf(m, sizeof m, "nRanks is %u, but rank(s) already joined with nRanks %u", size, s->size);
    } else if (s->size == 0) {
        s->tokens = calloc(size, sizeof *s->tokens);
        s->joined = calloc(size, sizeof *s->joined);
        if (s->tokens == NULL || s->joined == NULL) {
            rc = HCCL_E_MEMORY;
            snprintf(m, sizeof m, "out of host memory");
        } else {
            s->size = size;
        }
    }
    if (rc == HCCL_SUCCESS && s->joined[rank]) {
        rc = HCCL_E_PARA;
        snprintf(m, sizeof m, "rank %u already joined this communicator (every rank must be different)", rank);
    }
    if (rc == HCCL_SUCCESS) {
        s->joined[rank] = true;
        s->tokens[rank] = token;
        s->njoined++;
        *my_rank = (int)rank;
        if (s->njoined == s->size) {
            s->complete = true;
            pthread_cond_broadcast(&s->cv);
        }
        const struct timespec dl = pa_rt_deadline_ms(timeout_ms > INT32_MAX ? INT32_MAX : (int32_t)timeout_ms);
        while (!s->complete) {
            if (pa_rt_cond_wait(&s->cv, &s->mu, &dl) == ETIMEDOUT && !s->complete) {
                size_t n = (size_t)snprintf(m, sizeof m,
                                            "%u of %u ranks joined within HCCL_CONNECT_TIMEOUT (%lld s); missing:",
                                            s->njoined, s->size, (long long)(timeout_ms / 1000));
                for (uint32_t q = 0; q < s->size && n + 12 < sizeof m; q++) {
                    if (!s->joined[q]) n += (size_t)snprintf(m + n, sizeof m - n, " %u", q);
                }
                rc = HCCL_E_TIMEOUT;
                /* this rank leaves: it may join again */
                s->joined[rank] = false;
                s->njoined--;
                *my_rank = -1;
                break;
            }
        }
    }
    uint8_t one = 1;
    if (rc == HCCL_SUCCESS) {
        for (uint32_t q = 1; q < s->size; q++) one &= s->tokens[q] == s->tokens[0];
    }
    pthread_mutex_unlock(&s->mu);
    if (rc == HCCL_SUCCESS) reply(fd, rc, &one, 1);
    else reply(fd, rc, m, strlen(m));
}

static void handle_set(server *s, int fd, const char *p, size_t len) {
    uint32_t klen = len >= 4 ? get_u32(p) : 0;
    if (len < 4 || klen == 0 || klen > len - 4) {
        reply(fd, HCCL_E_INTERNAL, "malformed set", 13);
        return;
    }
    kv *k = calloc(1, sizeof *k);
    char *key = malloc(klen + 1);
    size_t vlen = len - 4 - klen;
    void *val = malloc(vlen ? vlen : 1);
    if (k == NULL || key == NULL || val == NULL) {
        free(k);
        free(key);
        free(val);
        reply(fd, HCCL_E_MEMORY, "out of host memory", 18);
        return;
    }
    memcpy(key, p + 4, klen);
    key[klen] = '\0';
    memcpy(val, p + 4 + klen, vlen);
    pthread_mutex_lock(&s->mu);
    kv *old = kv_find(s, key);
    if (old != NULL) {
        free(old->val);
        old->val = val;
        old->len = vlen;
        free(key);
        free(k);
    } else {
        k->key = key;
        k->val = val;
        k->len = vlen;
        k->next = s->kvs;
        s->kvs = k;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    reply(fd, HCCL_SUCCESS, NULL, 0);
}

static void handle_get(server *s, int fd, const char *p, size_t len) {
    if (len < 12) {
        reply(fd, HCCL_E_INTERNAL, "malformed get", 13);
        return;
    }
    const int64_t timeout_ms = get_i64(p);
    const uint32_t klen = get_u32(p + 8);
    if (klen == 0 || klen > len - 12) {
        reply(fd, HCCL_E_INTERNAL, "malformed get", 13);
        return;
    }
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)klen, p + 12);
    const struct timespec dl = pa_rt_deadline_ms(timeout_ms > INT32_MAX ? INT32_MAX : (int32_t)timeout_ms);
    pthread_mutex_lock(&s->mu);
    kv *k;
    while ((k = kv_find(s, key)) == NULL) {
        if (pa_rt_cond_wait(&s->cv, &s->mu, &dl) == ETIMEDOUT && (k = kv_find(s, key)) == NULL) break;
    }
    if (k == NULL) {
        pthread_mutex_unlock(&s->mu);
        char m[320];
        int n = snprintf(m, sizeof m, "key \"%s\" not set within %lld ms", key, (long long)timeout_ms);
        reply(fd, HCCL_E_TIMEOUT, m, (size_t)n);
        return;
    }
    void *val = malloc(k->len ? k->len : 1);
    size_t vlen = k->len;
    if (val != NULL) memcpy(val, k->val, vlen);
    pthread_mutex_unlock(&s->mu);
    if (val == NULL) reply(fd, HCCL_E_MEMORY, "out of host memory", 18);
    else reply(fd, HCCL_SUCCESS, val, vlen);
    free(val);
}

static void *conn_thread(void *arg) {
    conn *c = arg;
    server *s = c->s;
    int my_rank = -1;
    bool bye = false;
    for (;;) {
        char type = 0;
        char *buf = NULL;
        size_t len = 0;
        if (!recv_msg(c->fd, &type, &buf, &len)) break;
        if (type == T_JOIN) handle_join(s, c->fd, buf, len, &my_rank);
        else if (type == T_SET) handle_set(s, c->fd, buf, len);
        else if (type == T_GET) handle_get(s, c->fd, buf, len);
        else if (type == T_BYE) bye = true;
        free(buf);
        if (bye) break;
    }
    close(c->fd);
    pthread_mutex_lock(&s->mu);
    if (my_rank >= 0) {
        if (!s->complete) { /* left before everyone came: its rank is free again */
            s->joined[my_rank] = false;
            s->njoined--;
        } else if (++s->nbye == s->size) {
            s->stop = true;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(c);
    server_unref(s);
    return NULL;
}

static void *accept_thread(void *arg) {
    server *s = arg;
    const uint64_t limit_ns = (uint64_t)pa_hccl_connect_timeout_ms() * 1000000ull + 5000000000ull;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool stop = s->stop || (!s->complete && pa_rt_now_ns() - s->created_ns > limit_ns);
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        struct pollfd pfd = {s->listen_fd, POLLIN, 0};
        int r = poll(&pfd, 1, 200);
        if (r <= 0) continue;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = malloc(sizeof *c);
        pthread_t th;
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        s->refs++;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&th, NULL, conn_thread, c) != 0) {
            close(fd);
            free(c);
            server_unref(s);
            continue;
        }
        pthread_detach(th);
    }
    close(s->listen_fd);
    server_unref(s);
    return NULL;
}

static const char *if_ip(void) {
    const char *ip = getenv("HCCL_IF_IP");
    return (ip != NULL && ip[0] != '\0') ? ip : "127.0.0.1";
}

static HcclResult serve(const uint8_t session[16], const char *host, uint16_t port, uint16_t *bound, char *msg,
                        size_t cap) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(msg, cap, "HCCL_IF_IP=\"%s\" is not an IPv4 address", host);
        return HCCL_E_PARA;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(msg, cap, "socket: %s", strerror(errno));
        return HCCL_E_SYSCALL;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 128) != 0) {
        snprintf(msg, cap, "cannot listen on %s:%u: %s", host, (unsigned)port, strerror(errno));
        close(fd);
        return HCCL_E_TCP_CONNECT;
    }
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    server *s = calloc(1, sizeof *s);
    if (s == NULL) {
        close(fd);
        snprintf(msg, cap, "out of host memory");
        return HCCL_E_MEMORY;
    }
    memcpy(s->session, session, 16);
    s->listen_fd = fd;
    s->refs = 1;
    s->created_ns = pa_rt_now_ns();
    if (pa_rt_sync_init("the rendezvous store", &s->mu, &s->cv, NULL) != ACL_SUCCESS) {
        close(fd);
        free(s);
        snprintf(msg, cap, "%s", pa_get_errmsg());
        return HCCL_E_SYSCALL;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, accept_thread, s) != 0) {
        close(fd);
        server_unref(s);
        snprintf(msg, cap, "cannot start the rendezvous thread");
        return HCCL_E_SYSCALL;
    }
    pthread_detach(th);
    if (bound != NULL) *bound = ntohs(addr.sin_port);
    return HCCL_SUCCESS;
}

HcclResult pa_store_serve(const uint8_t session[16], char *host, uint16_t *port, char *msg, size_t cap) {
    snprintf(host, 64, "%s", if_ip());
    return serve(session, host, 0, port, msg, cap);
}

HcclResult pa_store_serve_at(const uint8_t session[16], const char *host, uint16_t port, char *msg, size_t cap) {
    return serve(session, host, port, NULL, msg, cap);
}

/* ---------------------------------------------------------------------------
 * Client
 * ------------------------------------------------------------------------- */

struct pa_store_client {
    int fd;
    char where[80];
};

HcclResult pa_store_connect(const char *host, uint16_t port, int64_t timeout_ms, pa_store_client **out, char *msg,
                            size_t cap) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(msg, cap, "the root info holds no valid address (\"%s\")", host);
        return HCCL_E_PARA;
    }
    const uint64_t end = pa_rt_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
    int err = 0;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(msg, cap, "socket: %s", strerror(errno));
            return HCCL_E_SYSCALL;
        }
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            pa_store_client *c = calloc(1, sizeof *c);
            if (c == NULL) {
                close(fd);
                snprintf(msg, cap, "out of host memory");
                return HCCL_E_MEMORY;
            }
            c->fd = fd;
            snprintf(c->where, sizeof c->where, "%s:%u", host, (unsigned)port);
            *out = c;
            return HCCL_SUCCESS;
        }
        err = errno;
        close(fd);
        if (pa_rt_now_ns() >= end) break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    snprintf(msg, cap,
             "cannot reach the rendezvous store of the root info at %s:%u (%s): the process that called "
             "HcclGetRootInfo must still run, and within HCCL_CONNECT_TIMEOUT",
             host, (unsigned)port, strerror(err));
    return HCCL_E_TCP_CONNECT;
}

/* Sends a request and reads the reply: its status, and payload (malloc'ed) or message. */
static HcclResult roundtrip(pa_store_client *c, char type, const void *a, size_t alen, const void *b, size_t blen,
                            char **payload, size_t *plen, char *msg, size_t cap) {
    char rtype = 0;
    char *buf = NULL;
    size_t len = 0;
    if (!send_msg(c->fd, type, a, alen, b, blen) || !recv_msg(c->fd, &rtype, &buf, &len) || rtype != T_REPLY ||
        len < 4) {
        free(buf);
        snprintf(msg, cap, "the rendezvous store at %s closed the connection (its process ended?)", c->where);
        return HCCL_E_TCP_TRANSFER;
    }
    uint32_t rc = get_u32(buf);
    if (rc != HCCL_SUCCESS) {
        snprintf(msg, cap, "%.*s", (int)(len - 4), buf + 4);
        free(buf);
        return (HcclResult)rc;
    }
    if (payload != NULL) {
        memmove(buf, buf + 4, len - 4);
        *payload = buf;
        *plen = len - 4;
    } else {
        free(buf);
    }
    return HCCL_SUCCESS;
}

HcclResult pa_store_join(pa_store_client *c, const uint8_t session[16], uint32_t size, uint32_t rank,
                         int64_t timeout_ms, bool *one_process, char *msg, size_t cap) {
    char req[40];
    uint64_t token = pa_store_process_token();
    memcpy(req, session, 16);
    memcpy(req + 16, &size, 4);
    memcpy(req + 20, &rank, 4);
    memcpy(req + 24, &token, 8);
    memcpy(req + 32, &timeout_ms, 8);
    char *p = NULL;
    size_t n = 0;
    HcclResult rc = roundtrip(c, T_JOIN, req, sizeof req, NULL, 0, &p, &n, msg, cap);
    if (rc == HCCL_SUCCESS) *one_process = n >= 1 && p[0] != 0;
    free(p);
    return rc;
}

HcclResult pa_store_set(pa_store_client *c, const char *key, const void *val, size_t len, char *msg, size_t cap) {
    size_t klen = strlen(key);
    char *req = malloc(4 + klen);
    if (req == NULL) {
        snprintf(msg, cap, "out of host memory");
        return HCCL_E_MEMORY;
    }
    uint32_t k32 = (uint32_t)klen;
    memcpy(req, &k32, 4);
    memcpy(req + 4, key, klen);
    HcclResult rc = roundtrip(c, T_SET, req, 4 + klen, val, len, NULL, NULL, msg, cap);
    free(req);
    return rc;
}

HcclResult pa_store_get(pa_store_client *c, const char *key, void **val, size_t *len, int64_t timeout_ms, char *msg,
                        size_t cap) {
    size_t klen = strlen(key);
    char req[12 + 256];
    if (klen == 0 || klen > 255) {
        snprintf(msg, cap, "bad store key");
        return HCCL_E_INTERNAL;
    }
    uint32_t k32 = (uint32_t)klen;
    memcpy(req, &timeout_ms, 8);
    memcpy(req + 8, &k32, 4);
    memcpy(req + 12, key, klen);
    char *p = NULL;
    HcclResult rc = roundtrip(c, T_GET, req, 12 + klen, NULL, 0, &p, len, msg, cap);
    if (rc == HCCL_SUCCESS) *val = p;
    return rc;
}

void pa_store_close(pa_store_client *c) {
    if (c == NULL) return;
    send_msg(c->fd, T_BYE, NULL, 0, NULL, 0);
    close(c->fd);
    free(c);
}

/* ---------------------------------------------------------------------------
 * Process token
 * ------------------------------------------------------------------------- */

static pthread_mutex_t g_token_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_token_pid;
static uint64_t g_token;

uint64_t pa_store_process_token(void) {
    pthread_mutex_lock(&g_token_mu);
    if (g_token_pid != getpid()) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = pa_rt_now_ns();
        g_token = (r & ~(uint64_t)0xffffffffu) | (uint32_t)getpid();
        g_token_pid = getpid();
    }
    uint64_t t = g_token;
    pthread_mutex_unlock(&g_token_mu);
    return t;
}
