/* Fatal CHECK / CHECK_EQ / CHECK_OK / CHECK_ERR macros shared by the C tests: on failure they print the
 * expression, the location and the recent error message, then exit(1).
 * Define PA_CHECK_ERRMSG() before including to read the message elsewhere. */
#ifndef PA_CHECK_H
#define PA_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PA_CHECK_ERRMSG
#define PA_CHECK_ERRMSG() aclGetRecentErrMsg()
#endif

static atomic_int g_checks; /* CHECK runs in test threads too */

static inline const char *pa_check_msg(void) {
    const char *m = PA_CHECK_ERRMSG();
    return m ? m : "(none)";
}

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        g_checks++;                                                                                 \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error message: %s\n", __FILE__,        \
                    __LINE__, #cond, pa_check_msg());                                               \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#define CHECK_EQ(a, b)                                                                              \
    do {                                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                                         \
        g_checks++;                                                                                 \
        if (a_ != b_) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n  last error message: %s\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_, pa_check_msg());                            \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

/* The recent error message mentions needle. */
static inline int msg_has(const char *needle) {
    const char *m = PA_CHECK_ERRMSG();
    return m != NULL && strstr(m, needle) != NULL;
}

/* A call returns success (0: ACL_SUCCESS, ACLNN_SUCCESS, HCCL_SUCCESS). */
#define CHECK_OK(expr) CHECK_EQ((expr), 0)

/* A call returns `code` and the recent message mentions `needle`. */
#define CHECK_ERR(expr, code, needle)                                                               \
    do {                                                                                            \
        CHECK_EQ((expr), (code));                                                                   \
        if (!msg_has(needle)) {                                                                     \
            fprintf(stderr, "%s:%d: message lacks \"%s\": %s\n", __FILE__, __LINE__, (needle),       \
                    pa_check_msg());                                                                \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#endif
