/* Fault injector, loaded with LD_PRELOAD: makes the Nth call (or every call
 * from the Nth on) of one libc / libpthread function fail as the system would.
 *
 *   gcc -shared -fPIC -O2 faultinject.c -o libfaultinject.so -ldl
 *   FI_FUNC=malloc FI_N=17 FI_MODE=once LD_PRELOAD=./libfaultinject.so ./program
 *
 * Functions and how they fail:
 *   malloc calloc realloc aligned_alloc posix_memalign   NULL / ENOMEM
 *   mmap (and mmap64)                                     MAP_FAILED, errno ENOMEM
 *   pthread_create                                        EAGAIN
 *   memfd_create                                          -1, errno EMFILE
 *   pthread_mutex_init pthread_cond_init                  ENOMEM / EAGAIN
 *   fopen                                                 NULL, errno EMFILE
 *
 * Environment:
 *   FI_FUNC    the function to fail ("any": one counter over all of them; unset: none)
 *   FI_N       1-based number of the counted call that fails (0 or unset: never)
 *   FI_MODE    "once" (default): only call N fails; "from": call N and every later one
 *   FI_SCOPE   "lib" (default): count only calls whose return address lies inside
 *              the shared object whose path contains FI_LIB; "all": count every call
 *   FI_LIB     default "libascendcl.so"; several objects separated by ':' (e.g.
 *              "libascendcl.so:ld-linux" adds the dynamic loader, which allocates
 *              the thread-local storage of dlopen'ed libraries)
 *   FI_REPORT  file written at exit: "<function> <calls counted>" lines, then
 *              "injected <failures returned>"
 *   FI_VERBOSE "1": print each injected failure to stderr, with the caller's address
 *              and the nearest exported symbol at or below it
 *
 * How calls are counted: a call counts when its caller is the library itself
 * (the return address of the interposed function, __builtin_return_address(0),
 * lies in one of the library's PT_LOAD segments, found with dl_iterate_phdr at
 * start-up and again after every dlopen). Calls libc makes on the library's
 * behalf (fopen's buffer, pthread_create's stack) and calls from the program
 * (Python, the C++ runtime) are not counted and never fail, so the process
 * around the library keeps running and what is tested is how the library
 * handles the failures of its own calls. A call the compiler turned into a
 * tail call is attributed to the caller's caller.
 *
 * Programs can also arm the injector themselves (resolve these with dlsym):
 *   void fi_arm(const char *func, long n, int from);  counters restart at 0
 *   void fi_disarm(void);
 *   long fi_injected(void);                           failures since fi_arm
 *   long fi_calls(const char *func);                  counted calls since fi_arm
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define FI_API __attribute__((visibility("default")))

enum {
    F_MALLOC, F_CALLOC, F_REALLOC, F_ALIGNED_ALLOC, F_POSIX_MEMALIGN, F_MMAP, F_PTHREAD_CREATE,
    F_MEMFD_CREATE, F_MUTEX_INIT, F_COND_INIT, F_FOPEN, F_COUNT
};
static const char *const g_names[F_COUNT] = {
    "malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "mmap", "pthread_create",
    "memfd_create", "pthread_mutex_init", "pthread_cond_init", "fopen",
};
#define F_ANY F_COUNT
#define F_NONE (-1)

static atomic_int g_target = F_NONE; /* a function index, F_ANY or F_NONE */
static atomic_long g_n;              /* 0 = never */
static atomic_int g_from;
static atomic_long g_calls[F_COUNT + 1]; /* per function; [F_ANY] counts all */
static atomic_long g_injected;
static int g_scope_all;
static int g_verbose;
static char g_lib[256] = "libascendcl.so";
static char g_report[1024];
#define FI_MAX_LIBS 4
static atomic_uintptr_t g_lo[FI_MAX_LIBS], g_hi[FI_MAX_LIBS]; /* the objects' address ranges, [lo, hi) */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* Index of the FI_LIB entry whose text `name` contains, or -1. */
static int lib_index(const char *name) {
    const char *p = g_lib;
    for (int i = 0; i < FI_MAX_LIBS && *p != '\0'; i++) {
        size_t len = strcspn(p, ":");
        for (const char *q = name; len > 0 && *q != '\0'; q++) {
            if (strncmp(q, p, len) == 0) return i;
        }
        p += len;
        if (*p == ':') p++;
    }
    return -1;
}

static int find_lib(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    int k = info->dlpi_name == NULL ? -1 : lib_index(info->dlpi_name);
    if (k < 0) return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi > lo) {
        atomic_store(&g_hi[k], 0); /* never a half-updated range */
        atomic_store(&g_lo[k], lo);
        atomic_store(&g_hi[k], hi);
    }
    return 0;
}

static int in_scope(uintptr_t ra) {
    if (g_scope_all) return 1;
    for (int k = 0; k < FI_MAX_LIBS; k++) {
        if (ra >= atomic_load(&g_lo[k]) && ra < atomic_load(&g_hi[k])) return 1;
    }
    return 0;
}

static void rescan(void) {
    if (!g_scope_all) dl_iterate_phdr(find_lib, NULL);
}

/* Counts the call and decides whether it fails. */
static int should_fail(int fn, uintptr_t ra) {
    int target = atomic_load_explicit(&g_target, memory_order_relaxed);
    if (target == F_NONE || (target != F_ANY && target != fn)) return 0;
    if (!in_scope(ra)) return 0;
    long k = atomic_fetch_add(&g_calls[fn], 1) + 1;
    long kany = atomic_fetch_add(&g_calls[F_ANY], 1) + 1;
    if (target == F_ANY) k = kany;
    long n = atomic_load(&g_n);
    if (n <= 0 || k < n || (k > n && !atomic_load(&g_from))) return 0;
    atomic_fetch_add(&g_injected, 1);
    if (g_verbose) {
        Dl_info di;
        memset(&di, 0, sizeof di);
        dladdr((void *)ra, &di);
        char buf[512];
        int len = snprintf(buf, sizeof buf, "faultinject: failing %s call %ld from %s+0x%lx (in or after %s)\n",
                           g_names[fn], k, di.dli_fname ? di.dli_fname : "?",
                           (unsigned long)(ra - (uintptr_t)di.dli_fbase), di.dli_sname ? di.dli_sname : "?");
        if (len > 0) (void)!write(2, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
    }
    return 1;
}

#define RA() ((uintptr_t)__builtin_return_address(0))

/* ---- the allocator ---- */

FI_API void *malloc(size_t size) {
    if (should_fail(F_MALLOC, RA())) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

FI_API void *calloc(size_t n, size_t size) {
    if (should_fail(F_CALLOC, RA())) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

FI_API void *realloc(void *p, size_t size) {
    if (should_fail(F_REALLOC, RA())) {
        errno = ENOMEM;
        return NULL; /* p stays allocated, as with a real failure */
    }
    return __libc_realloc(p, size);
}

static int pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

FI_API void *aligned_alloc(size_t align, size_t size) {
    if (should_fail(F_ALIGNED_ALLOC, RA())) {
        errno = ENOMEM;
        return NULL;
    }
    if (!pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return __libc_memalign(align, size);
}

FI_API int posix_memalign(void **out, size_t align, size_t size) {
    if (should_fail(F_POSIX_MEMALIGN, RA())) return ENOMEM;
    if (!pow2(align) || align % sizeof(void *) != 0) return EINVAL;
    void *p = __libc_memalign(align, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

/* ---- other resources (the real functions come from dlsym(RTLD_NEXT)) ---- */

#define REAL(type, name, ...)                                                                   \
    static type (*real)(__VA_ARGS__);                                                           \
    if (real == NULL) *(void **)&real = dlsym(RTLD_NEXT, name);

FI_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    REAL(void *, "mmap", void *, size_t, int, int, int, off_t)
    if (should_fail(F_MMAP, RA())) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return real(addr, len, prot, flags, fd, off);
}

FI_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    REAL(void *, "mmap64", void *, size_t, int, int, int, off_t)
    if (should_fail(F_MMAP, RA())) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return real(addr, len, prot, flags, fd, off);
}

FI_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    REAL(int, "pthread_create", pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
    if (should_fail(F_PTHREAD_CREATE, RA())) return EAGAIN;
    return real(th, attr, fn, arg);
}

FI_API int memfd_create(const char *name, unsigned flags) {
    REAL(int, "memfd_create", const char *, unsigned)
    if (should_fail(F_MEMFD_CREATE, RA())) {
        errno = EMFILE;
        return -1;
    }
    return real(name, flags);
}

FI_API int pthread_mutex_init(pthread_mutex_t *mu, const pthread_mutexattr_t *attr) {
    REAL(int, "pthread_mutex_init", pthread_mutex_t *, const pthread_mutexattr_t *)
    if (should_fail(F_MUTEX_INIT, RA())) return ENOMEM;
    return real(mu, attr);
}

FI_API int pthread_cond_init(pthread_cond_t *cv, const pthread_condattr_t *attr) {
    REAL(int, "pthread_cond_init", pthread_cond_t *, const pthread_condattr_t *)
    if (should_fail(F_COND_INIT, RA())) return EAGAIN;
    return real(cv, attr);
}

FI_API FILE *fopen(const char *path, const char *mode) {
    REAL(FILE *, "fopen", const char *, const char *)
    if (should_fail(F_FOPEN, RA())) {
        errno = EMFILE;
        return NULL;
    }
    return real(path, mode);
}

/* A library loaded later (Python's cffi, ctypes) gets its range found here. */
FI_API void *dlopen(const char *file, int mode) {
    REAL(void *, "dlopen", const char *, int)
    void *h = real(file, mode);
    rescan();
    return h;
}

/* ---- control ---- */

static int index_of(const char *name) {
    if (name == NULL || name[0] == '\0' || strcmp(name, "none") == 0) return F_NONE;
    if (strcmp(name, "any") == 0) return F_ANY;
    for (int i = 0; i < F_COUNT; i++) {
        if (strcmp(name, g_names[i]) == 0) return i;
    }
    fprintf(stderr, "faultinject: unknown function \"%s\"\n", name);
    abort();
}

FI_API void fi_disarm(void) { atomic_store(&g_target, F_NONE); }

FI_API void fi_arm(const char *func, long n, int from) {
    fi_disarm();
    for (int i = 0; i <= F_COUNT; i++) atomic_store(&g_calls[i], 0);
    atomic_store(&g_injected, 0);
    atomic_store(&g_n, n);
    atomic_store(&g_from, from != 0);
    rescan();
    atomic_store(&g_target, index_of(func));
}

FI_API long fi_injected(void) { return atomic_load(&g_injected); }

FI_API long fi_calls(const char *func) {
    int i = index_of(func);
    return i == F_NONE ? 0 : atomic_load(&g_calls[i]);
}

__attribute__((constructor)) static void fi_init(void) {
    const char *s = getenv("FI_SCOPE");
    g_scope_all = s != NULL && strcmp(s, "all") == 0;
    if ((s = getenv("FI_LIB")) != NULL && s[0] != '\0') snprintf(g_lib, sizeof g_lib, "%s", s);
    if ((s = getenv("FI_REPORT")) != NULL) snprintf(g_report, sizeof g_report, "%s", s);
    g_verbose = (s = getenv("FI_VERBOSE")) != NULL && strcmp(s, "1") == 0;
    s = getenv("FI_MODE");
    int from = s != NULL && strcmp(s, "from") == 0;
    if (s != NULL && !from && strcmp(s, "once") != 0) {
        fprintf(stderr, "faultinject: FI_MODE must be once or from, got \"%s\"\n", s);
        abort();
    }
    s = getenv("FI_N");
    fi_arm(getenv("FI_FUNC"), s != NULL ? atol(s) : 0, from);
}

__attribute__((destructor)) static void fi_fini(void) {
    if (g_report[0] == '\0') return;
    int target = atomic_load(&g_target);
    fi_disarm();
    FILE *f = fopen(g_report, "w");
    if (f == NULL) return;
    for (int i = 0; i < F_COUNT; i++) fprintf(f, "%s %ld\n", g_names[i], atomic_load(&g_calls[i]));
    fprintf(f, "any %ld\n", atomic_load(&g_calls[F_ANY]));
    fprintf(f, "injected %ld\n", atomic_load(&g_injected));
    fprintf(f, "target %s\n", target == F_NONE ? "none" : target == F_ANY ? "any" : g_names[target]);
    fclose(f);
}
