/* The in-process engine: every rank of the group is a thread of this process
 * (its stream worker), so bytes move by memcpy between the ranks' device
 * buffers, which all live in this process.
 *
 * A collective exchange is two barriers: each rank posts its send list and
 * arrives; then every rank pulls what it receives from the posted lists of its
 * peers and arrives again, after which the senders may reuse their buffers.
 * Point-to-point transfers go through one mailbox per ordered pair of ranks:
 * a send posts its buffer and waits until the receiver copied it.
 * A barrier that times out (HCCL_EXEC_TIMEOUT) breaks the group: that rank
 * reports which ranks never arrived and every other rank, waiting or later,
 * fails with that message instead of hanging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccl/pa_hccl.h"
#include "runtime/pa_rt_base.h"

typedef struct lg_mail {
    uint64_t seq;
    uint32_t src;
    const void *ptr;
    uint64_t bytes;
    int state; /* MAIL_POSTED, MAIL_COPYING, MAIL_DONE, MAIL_MISMATCH */
    uint64_t want; /* the receiver's byte count, on a mismatch */
    struct lg_mail *next;
} lg_mail;

enum { MAIL_POSTED, MAIL_COPYING, MAIL_DONE, MAIL_MISMATCH };

typedef struct local_group {
    uint8_t session[16];
    uint32_t size;
    int members; /* joined and not yet left */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* barrier */
    uint64_t gen;
    uint32_t arrived;
    uint64_t *arrived_gen; /* per rank: gen + 1 once it arrived at barrier `gen` */
    const pa_xfer **posted; /* per rank: its sends during an exchange */
    /* failure */
    bool broken;
    HcclResult broken_rc;
    char broken_msg[PA_HCCL_MSG_CAP];
    lg_mail **mail; /* size x size: mail[src * size + dst] */
    struct local_group *next;
} local_group;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static local_group *g_groups; /* guarded by g_mu */

static void group_free(local_group *g) {
    for (size_t i = 0; i < (size_t)g->size * g->size; i++) {
        while (g->mail[i] != NULL) {
            lg_mail *m = g->mail[i];
            g->mail[i] = m->next;
            free(m);
        }
    }
    pa_rt_sync_destroy(&g->mu, &g->cv, NULL);
    free(g->arrived_gen);
    free(g->posted);
    free(g->mail);
    free(g);
}

void *pa_local_join(const uint8_t session[16], uint32_t size, uint32_t rank) {
    PA_UNUSED(rank);
    pthread_mutex_lock(&g_mu);
    local_group *g = g_groups;
    while (g != NULL && (memcmp(g->session, session, 16) != 0 || g->size != size)) g = g->next;
    if (g == NULL) {
        g = calloc(1, sizeof *g);
        if (g != NULL) {
            g->arrived_gen = calloc(size, sizeof *g->arrived_gen);
            g->posted = calloc(size, sizeof *g->posted);
            g->mail = calloc((size_t)size * size, sizeof *g->mail);
        }
        if (g == NULL || g->arrived_gen == NULL || g->posted == NULL || g->mail == NULL) {
            if (g != NULL) {
                free(g->arrived_gen);
                free(g->posted);
                free(g->mail);
                free(g);
            }
            pthread_mutex_unlock(&g_mu);
            return NULL;
        }
        memcpy(g->session, session, 16);
        g->size = size;
        if (pa_rt_sync_init("the in-process group", &g->mu, &g->cv, NULL) != ACL_SUCCESS) {
            free(g->arrived_gen);
            free(g->posted);
            free(g->mail);
            free(g);
            pthread_mutex_unlock(&g_mu);
            return NULL;
        }
        g->next = g_groups;
        g_groups = g;
    }
    g->members++;
    pthread_mutex_unlock(&g_mu);
    return g;
}

static void local_leave(void *eng, uint32_t rank) {
    PA_UNUSED(rank);
    local_group *g = eng;
    pthread_mutex_lock(&g_mu);
    bool last = --g->members == 0;
    if (last) {
        for (local_group **pp = &g_groups; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == g) {
                *pp = g->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (last) group_free(g);
}

static struct timespec deadline_of(int64_t timeout_ms, bool *forever) {
    *forever = timeout_ms <= 0;
    return pa_rt_deadline_ms(timeout_ms > INT32_MAX ? INT32_MAX : (int32_t)(timeout_ms > 0 ? timeout_ms : 0));
}

/* Caller holds g->mu. */
static HcclResult broken_result(const local_group *g, char *msg, size_t cap) {
    snprintf(msg, cap, "%s", g->broken_msg);
    return g->broken_rc == HCCL_E_TIMEOUT ? HCCL_E_REMOTE : g->broken_rc;
}

/* Caller holds g->mu. Marks the group failed and wakes every waiter. */
static void break_group(local_group *g, HcclResult rc, const char *msg) {
    if (!g->broken) {
        g->broken = true;
        g->broken_rc = rc;
        snprintf(g->broken_msg, sizeof g->broken_msg, "%s", msg);
    }
    pthread_cond_broadcast(&g->cv);
}

/* Caller holds g->mu. */
static HcclResult barrier(local_group *g, uint32_t rank, int64_t timeout_ms, const char *what, char *msg,
                          size_t cap) {
    if (g->broken) return broken_result(g, msg, cap);
    const uint64_t my = g->gen;
    g->arrived_gen[rank] = my + 1;
    if (++g->arrived == g->size) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
        return HCCL_SUCCESS;
    }
    bool forever;
    const struct timespec dl = deadline_of(timeout_ms, &forever);
    while (g->gen == my && !g->broken) {
        if (pa_rt_cond_wait(&g->cv, &g->mu, forever ? NULL : &dl) == ETIMEDOUT && g->gen == my && !g->broken) {
            char missing[160] = "";
            size_t len = 0;
            int n = 0;
            for (uint32_t q = 0; q < g->size && len + 16 < sizeof missing; q++) {
                if (g->arrived_gen[q] != my + 1) {
                    len += (size_t)snprintf(missing + len, sizeof missing - len, "%s%u", n++ ? ", " : "", q);
                }
            }
            char m[PA_HCCL_MSG_CAP];
            snprintf(m, sizeof m,
                     "%s: rank %u waited %lld ms (HCCL_EXEC_TIMEOUT) for rank(s) %s of %u, which never arrived", what,
                     rank, (long long)timeout_ms, missing, g->size);
            break_group(g, HCCL_E_TIMEOUT, m);
            snprintf(msg, cap, "%s", m);
            return HCCL_E_TIMEOUT;
        }
    }
    if (g->gen != my) return HCCL_SUCCESS;
    return broken_result(g, msg, cap);
}

static HcclResult local_exchange(void *eng, uint32_t rank, uint64_t tag, const pa_xfer *sends, const pa_xfer *recvs,
                                 int64_t timeout_ms, char *msg, size_t cap) {
    PA_UNUSED(tag);
    local_group *g = eng;
    pthread_mutex_lock(&g->mu);
    g->posted[rank] = sends;
    HcclResult rc = barrier(g, rank, timeout_ms, "collective", msg, cap);
    pthread_mutex_unlock(&g->mu);
    if (rc != HCCL_SUCCESS) {
        pthread_mutex_lock(&g->mu);
        g->posted[rank] = NULL;
        pthread_mutex_unlock(&g->mu);
        return rc;
    }
    /* Every rank has posted; the lists stay valid until the second barrier. */
    HcclResult bad = HCCL_SUCCESS;
    for (uint32_t q = 0; q < g->size; q++) {
        if (q == rank || recvs[q].bytes == 0) continue;
        const pa_xfer *from = &g->posted[q][rank];
        if (from->bytes != recvs[q].bytes) {
            snprintf(msg, cap, "collective: rank %u expected %llu bytes from rank %u, which sends %llu", rank,
                     (unsigned long long)recvs[q].bytes, q, (unsigned long long)from->bytes);
            bad = HCCL_E_INTERNAL;
            continue;
        }
        memcpy(recvs[q].ptr, from->ptr, recvs[q].bytes);
    }
    char late[PA_HCCL_MSG_CAP];
    pthread_mutex_lock(&g->mu);
    if (bad != HCCL_SUCCESS) break_group(g, bad, msg);
    rc = barrier(g, rank, timeout_ms, "collective", late, sizeof late);
    g->posted[rank] = NULL;
    pthread_mutex_unlock(&g->mu);
    if (bad != HCCL_SUCCESS) return bad;
    if (rc != HCCL_SUCCESS) snprintf(msg, cap, "%s", late);
    return rc;
}

/* Caller holds g->mu. The mail of `seq` from src to dst, or NULL. */
static lg_mail *find_mail(local_group *g, uint32_t src, uint32_t dst, uint64_t seq) {
    for (lg_mail *m = g->mail[(size_t)src * g->size + dst]; m != NULL; m = m->next) {
        if (m->seq == seq) return m;
    }
    return NULL;
}

/* Caller holds g->mu. */
static void unlink_mail(local_group *g, uint32_t src, uint32_t dst, lg_mail *m) {
    for (lg_mail **pp = &g->mail[(size_t)src * g->size + dst]; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            return;
        }
    }
}

static HcclResult local_p2p(void *eng, uint32_t rank, const pa_p2p *items, uint32_t n, int64_t timeout_ms,
                            char *msg, size_t cap) {
    local_group *g = eng;
    lg_mail **mine = calloc(n ? n : 1, sizeof *mine);
    if (mine == NULL) {
        snprintf(msg, cap, "out of host memory for %u transfers", n);
        return HCCL_E_MEMORY;
    }
    HcclResult rc = HCCL_SUCCESS;
    bool forever;
    const struct timespec dl = deadline_of(timeout_ms, &forever);
    pthread_mutex_lock(&g->mu);
    if (g->broken) rc = broken_result(g, msg, cap);
    /* post every send */
    for (uint32_t i = 0; i < n && rc == HCCL_SUCCESS; i++) {
        if (!items[i].send) continue;
        lg_mail *m = calloc(1, sizeof *m);
        if (m == NULL) {
            snprintf(msg, cap, "out of host memory posting a send");
            rc = HCCL_E_MEMORY;
            break;
        }
        m->seq = items[i].seq;
        m->src = rank;
        m->ptr = items[i].ptr;
        m->bytes = items[i].bytes;
        lg_mail **tail = &g->mail[(size_t)rank * g->size + items[i].peer];
        while (*tail != NULL) tail = &(*tail)->next;
        *tail = m;
        mine[i] = m;
    }
    pthread_cond_broadcast(&g->cv);
    /* take every receive */
    for (uint32_t i = 0; i < n && rc == HCCL_SUCCESS; i++) {
        if (items[i].send) continue;
        const uint32_t p = items[i].peer;
        lg_mail *m;
        while ((m = find_mail(g, p, rank, items[i].seq)) == NULL && !g->broken) {
            if (pa_rt_cond_wait(&g->cv, &g->mu, forever ? NULL : &dl) == ETIMEDOUT &&
                find_mail(g, p, rank, items[i].seq) == NULL) {
                snprintf(msg, cap,
                         "HcclRecv: rank %u waited %lld ms (HCCL_EXEC_TIMEOUT) for the matching HcclSend of rank %u, "
                         "which never came",
                         rank, (long long)timeout_ms, p);
                rc = HCCL_E_TIMEOUT;
                break;
            }
        }
        if (rc != HCCL_SUCCESS) break;
        if (m == NULL) {
            rc = broken_result(g, msg, cap);
            break;
        }
        if (m->bytes != items[i].bytes) {
            m->state = MAIL_MISMATCH;
            m->want = items[i].bytes;
            snprintf(msg, cap, "HcclRecv: rank %u receives %llu bytes from rank %u, whose HcclSend has %llu", rank,
                     (unsigned long long)items[i].bytes, p, (unsigned long long)m->bytes);
            rc = HCCL_E_PARA;
            pthread_cond_broadcast(&g->cv);
            break;
        }
        m->state = MAIL_COPYING;
        pthread_mutex_unlock(&g->mu);
        memcpy(items[i].ptr, m->ptr, items[i].bytes);
        pthread_mutex_lock(&g->mu);
        m->state = MAIL_DONE;
        pthread_cond_broadcast(&g->cv);
    }
    /* wait until every send was taken (or withdraw it) */
    for (uint32_t i = 0; i < n; i++) {
        lg_mail *m = mine[i];
        if (m == NULL) continue;
        while (rc == HCCL_SUCCESS && (m->state == MAIL_POSTED || m->state == MAIL_COPYING) && !g->broken) {
            if (pa_rt_cond_wait(&g->cv, &g->mu, forever ? NULL : &dl) == ETIMEDOUT && m->state == MAIL_POSTED) {
                snprintf(msg, cap,
                         "HcclSend: rank %u waited %lld ms (HCCL_EXEC_TIMEOUT) for the matching HcclRecv of rank %u, "
                         "which never came",
                         rank, (long long)timeout_ms, items[i].peer);
                rc = HCCL_E_TIMEOUT;
            }
        }
        while (m->state == MAIL_COPYING) pthread_cond_wait(&g->cv, &g->mu); /* a copy in progress ends soon */
        if (rc == HCCL_SUCCESS && m->state == MAIL_MISMATCH) {
            snprintf(msg, cap, "HcclSend: rank %u sends %llu bytes to rank %u, whose HcclRecv has %llu", rank,
                     (unsigned long long)m->bytes, items[i].peer, (unsigned long long)m->want);
            rc = HCCL_E_PARA;
        } else if (rc == HCCL_SUCCESS && m->state == MAIL_POSTED && g->broken) {
            rc = broken_result(g, msg, cap);
        }
        unlink_mail(g, rank, items[i].peer, m);
        free(m);
    }
    pthread_mutex_unlock(&g->mu);
    free(mine);
    return rc;
}

const pa_engine_ops pa_engine_local = {"in-process", local_exchange, local_p2p, local_leave};
