/* The reduction lane kernels for the avx512 tier (reduce_lanes.inc). */
#include <math.h>

#include "kernels/reduce/reduce.h"

#define SFX(name) name##_avx512
#include "kernels/reduce/reduce_lanes.inc"

const pa_red_lanes *pa_red_lanes_avx512(void);
const pa_red_lanes *pa_red_lanes_avx512(void) { return &lanes_avx512; }
