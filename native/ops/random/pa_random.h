/* The random family (normal, uniform, random integers, bernoulli, randperm,
 * multinomial, dropout masks): native/ops/random/, kernels in
 * native/kernels/random/ (Philox4x32-10, see docs/random.md). */
#ifndef PA_RANDOM_H
#define PA_RANDOM_H

#include "ops/core/pa_op.h"

/* The kernels (the `kernel` of each op table row; 0 is none). */
enum {
    PA_RANDOM_NONE,
    PA_RANDOM_NORMAL, PA_RANDOM_NORMAL_T,
    PA_RANDOM_UNIFORM, PA_RANDOM_UNIFORM_T,
    PA_RANDOM_RANDOM, PA_RANDOM_RANDOM_T,
    PA_RANDOM_BERNOULLI, PA_RANDOM_BERNOULLI_T, /* prob a scalar / a tensor (in place or into out) */
    PA_RANDOM_RANDPERM,
    PA_RANDOM_MULTINOMIAL, PA_RANDOM_MULTINOMIAL_T,
    PA_RANDOM_GEN_MASK, PA_RANDOM_GEN_MASK_V2, PA_RANDOM_GEN_MASK_V2_T,
    PA_RANDOM_DO_MASK,
};

/* Every operator of family "random". */
int pa_plan_random(const pa_op *op, const pa_arg *a, uint64_t *workspaceSize, aclOpExecutor **executor);
int pa_run_random(const void *plan, void *workspace, uint64_t workspace_size);

#endif
