/* The emulated devices: their SoC identity, CANN version, and each device's
 * memory capacity with the accounting every device allocation draws on.
 *
 * Capacity rule (per device): PYACLNN_DEVICE_MEMORY (bytes, or with a K/M/G/T
 * suffix, 1024 based) if set; otherwise the HBM of the emulated SoC, capped at
 * half of the host RAM (or of the cgroup memory limit, when lower) divided by
 * the device count, rounded down to 2 MiB: all devices of a process together
 * stay within half of the host. Charging only counts: host pages are committed
 * when first touched. */
#ifndef PA_CAPACITY_H
#define PA_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>

#define PA_DEVICE_GRANULARITY ((size_t)2 << 20) /* 2 MiB, the device's page size */

/* Emulated SoC name (PYACLNN_SOC_NAME picks one of the supported ones). */
const char *pa_soc_name(void);
/* HBM size of the emulated SoC, in bytes. */
size_t pa_soc_hbm_bytes(void);

size_t pa_capacity_total(int device);
size_t pa_capacity_used(int device);
/* Takes `bytes` from the device's capacity; false (nothing taken) if they do not fit. */
bool pa_capacity_charge(int device, size_t bytes);
void pa_capacity_uncharge(int device, size_t bytes);
/* Records and returns ACL_ERROR_RT_MEMORY_ALLOCATION for a request that did not fit. */
int pa_capacity_fail(const char *api, int device, size_t bytes);

/* Parses "<digits>[K|M|G|T][i][B]" (case-insensitive, 1024-based). */
bool pa_parse_bytes(const char *s, size_t *out);

#endif
