/* One process-wide worker pool for kernels.
 * Determinism contract: work is cut into fixed chunks of `grain` items that do
 * not depend on the thread count; each chunk is run by exactly one thread. */
#ifndef PA_THREADPOOL_H
#define PA_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

/* Processes items [begin, end) of one chunk. */
typedef void (*pa_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Runs fn over [0, n) in chunks [k*grain, min(n,(k+1)*grain)). Blocks until all
 * chunks are done. The calling thread takes part. Calls from several threads at
 * once are serialised. grain <= 0 means 1. */
void pa_parallel_for(int64_t n, int64_t grain, pa_range_fn fn, void *ctx);

/* Threads used by pa_parallel_for (>= 1): PYACLNN_NUM_THREADS, or pyaclnnSetNumThreads,
 * or the CPUs this process may use (affinity mask and cgroup cpu quota). */
int pa_num_threads(void);
void pa_set_num_threads(int n);  /* 0 = default */

/* Per-thread scratch buffer, 64-byte aligned, at least `bytes` long, valid until
 * the next call on the same thread. For O(threads x tile) kernel scratch.
 * Returns NULL on allocation failure. */
void *pa_thread_scratch(size_t bytes);

#endif
