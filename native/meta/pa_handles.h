/* The registry of live aclnn handles (tensors, scalars, value arrays, lists).
 *
 * Every handle pyaclnn creates is entered here, and every API that takes one
 * looks it up by address (one hash lookup under a mutex) before reading it, so
 * a destroyed handle or a pointer pyaclnn never made is an error code, not a
 * read of memory the library does not own. Destroyed handles are not freed at
 * once: the last PA_HANDLE_QUARANTINE of them are parked, so their addresses
 * cannot be handed out again by malloc while they are likely to be reused by
 * mistake (destroying twice then says "already destroyed"). */
#ifndef PA_HANDLES_H
#define PA_HANDLES_H

#include <stdbool.h>
#include <stddef.h>

#define PA_HANDLE_QUARANTINE 1024

typedef enum pa_handle_kind {
    PA_HANDLE_TENSOR = 1,
    PA_HANDLE_SCALAR,
    PA_HANDLE_INT_ARRAY,
    PA_HANDLE_FLOAT_ARRAY,
    PA_HANDLE_BOOL_ARRAY,
    PA_HANDLE_TENSOR_LIST,
    PA_HANDLE_SCALAR_LIST,
    PA_HANDLE_OP_ATTR, /* aclopAttr (aclop/) */
} pa_handle_kind;
#define PA_HANDLE_KIND_LAST PA_HANDLE_OP_ATTR

/* "aclTensor", "aclScalar", ... */
const char *pa_handle_kind_name(pa_handle_kind kind);

/* Enters a new handle (memory from malloc, owned by the registry from now on
 * for its release). False when host memory runs out (nothing is entered). */
bool pa_handle_register(const void *h, pa_handle_kind kind);

/* Whether h is a live handle of `kind`. Never dereferences h. */
bool pa_handle_live(const void *h, pa_handle_kind kind);

/* 0 if h is a live handle of `kind`; else ACLNN_ERR_PARAM_NULLPTR (h NULL) or
 * ACLNN_ERR_PARAM_INVALID after pa_fail("<api>: <param> must be a live <kind>,
 * got <h>, which ..."), saying whether h was destroyed, is another kind of
 * handle, or was never made by pyaclnn. */
int pa_handle_check(const char *api, const char *param, const void *h, pa_handle_kind kind);

/* Takes a live handle out of the registry, for destruction: when several
 * threads race, one wins. 0, or pa_handle_check's error (a NULL h is an error
 * here too: callers accept NULL before). The winner releases what the handle
 * owns, then calls pa_handle_retire. */
int pa_handle_take(const char *api, const char *param, const void *h, pa_handle_kind kind);

/* Parks a taken handle's memory in the quarantine; the oldest parked block is
 * freed (free()) when the quarantine is full. */
void pa_handle_retire(void *h, pa_handle_kind kind);

/* Frees every quarantined block (aclnnFinalize). Live handles stay valid. */
void pa_handles_drain(void);

/* Live handles of `kind` (0 = all kinds). */
size_t pa_handles_count(pa_handle_kind kind);

#endif
