/* Run-time ISA tiers. The CPU is probed once; the active tier can be capped
 * downward by PYACLNN_MAX_ISA (read at first use) or pyaclnnSetMaxIsa(). */
#ifndef PA_CPU_H
#define PA_CPU_H

#include <stdbool.h>

typedef enum pa_isa {
    PA_ISA_SCALAR = 0,  /* portable C, the oracle */
    PA_ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
    PA_ISA_AVX512 = 2,  /* AVX-512 F/BW/VL/DQ */
    PA_ISA_AVX512BF16 = 3, /* AVX-512 F/BW/VL/DQ + BF16 (vdpbf16ps, vcvtne2ps2bf16) */
} pa_isa;

pa_isa pa_cpu_detected_isa(void);  /* best tier the CPU and OS support */
pa_isa pa_cpu_isa(void);           /* active tier: detected, capped */
bool pa_cpu_has_avx512bf16(void);  /* the active tier is avx512bf16 */
const char *pa_isa_name(pa_isa isa);
/* Parses "scalar" | "avx2" | "avx512" | "avx512bf16"; returns false if unknown. */
bool pa_isa_parse(const char *s, pa_isa *out);
/* Caps the active tier (NULL restores the PYACLNN_MAX_ISA / detected default).
 * Returns false (and leaves the tier unchanged) for an unknown name. A cap above
 * the detected tier is clamped and a warning printed to stderr. */
bool pa_cpu_set_cap(const char *tier);

#endif
