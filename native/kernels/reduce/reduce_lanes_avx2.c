/* The reduction lane kernels for the avx2 tier (reduce_lanes.inc). */
#include <math.h>

#include "kernels/reduce/reduce.h"

#define SFX(name) name##_avx2
#include "kernels/reduce/reduce_lanes.inc"

const pa_red_lanes *pa_red_lanes_avx2(void);
const pa_red_lanes *pa_red_lanes_avx2(void) { return &lanes_avx2; }
