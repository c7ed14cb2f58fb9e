/* The reduction lane kernels for the scalar tier (reduce_lanes.inc). */
#include <math.h>

#include "kernels/reduce/reduce.h"

#define SFX(name) name##_scalar
#include "kernels/reduce/reduce_lanes.inc"

const pa_red_lanes *pa_red_lanes_scalar(void);
const pa_red_lanes *pa_red_lanes_scalar(void) { return &lanes_scalar; }
