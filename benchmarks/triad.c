/* STREAM-style triad a[i] = b[i] + s*c[i] on T threads: the machine's memory
 * bandwidth limit, measured in the same run as the ops.
 * usage: triad <elements per array> <repetitions> <threads>; prints best GB/s.
 * Bytes counted per repetition: 3 arrays x 8 bytes (STREAM convention). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

typedef struct { double *a, *b, *c; size_t lo, hi; int reps; pthread_barrier_t *bar; double *times; int id; } job;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *p) {
    job *j = p;
    for (size_t i = j->lo; i < j->hi; i++) { j->a[i] = 0.0; j->b[i] = 1.0; j->c[i] = 2.0; }
    const double s = 3.0;
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->bar);
        double t0 = now();
        double *restrict a = j->a, *restrict b = j->b, *restrict c = j->c;
        for (size_t i = j->lo; i < j->hi; i++) a[i] = b[i] + s * c[i];
        pthread_barrier_wait(j->bar);
        if (j->id == 0) j->times[r] = now() - t0;
    }
    return NULL;
}

/* 2 MiB aligned with transparent huge pages, as pyaclnn's device allocations get. */
static double *huge_array(size_t n) {
    size_t bytes = (n * 8 + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
    double *p = aligned_alloc((size_t)2 << 20, bytes);
    if (p != NULL) (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 25;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    int nt = argc > 3 ? atoi(argv[3]) : 2;
    double *a = huge_array(n), *b = huge_array(n), *c = huge_array(n);
    double *times = calloc((size_t)reps, sizeof *times);
    pthread_t th[256];
    job jobs[256];
    pthread_barrier_t bar;
    if (!a || !b || !c || !times || nt < 1 || nt > 256) return 1;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    for (int t = 0; t < nt; t++) {
        jobs[t] = (job){a, b, c, n * t / nt, n * (t + 1) / nt, reps, &bar, times, t};
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    double best = 1e30;
    for (int r = 1; r < reps; r++) best = times[r] < best ? times[r] : best; /* skip warm-up */
    printf("%.3f\n", 3.0 * 8.0 * (double)n / best / 1e9);
    return a[n / 2] == 7.0 ? 0 : 2;
}
