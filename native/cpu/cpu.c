/* ISA detection (pa_cpu.h). The CPU is probed once; the active tier is the
 * detected one, capped by PYACLNN_MAX_ISA (read at first use) or at run time
 * by pa_cpu_set_cap(). All state is atomic, so any thread may query it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "cpu/pa_cpu.h"

/* Only probe for tiers whose kernels were compiled in (x86-64, not PA_SCALAR_ONLY). */
#if defined(PA_HAVE_X86_KERNELS)
#include <cpuid.h>
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pa_isa g_detected = PA_ISA_SCALAR;
static pa_isa g_default_cap = PA_ISA_SCALAR; /* detected, capped by PYACLNN_MAX_ISA */
static atomic_int g_active;

const char *pa_isa_name(pa_isa isa) {
    switch (isa) {
    case PA_ISA_AVX512BF16: return "avx512bf16";
    case PA_ISA_AVX512: return "avx512";
    case PA_ISA_AVX2: return "avx2";
    case PA_ISA_SCALAR: return "scalar";
    default: return "unknown";
    }
}

bool pa_isa_parse(const char *s, pa_isa *out) {
    if (s == NULL) return false;
    pa_isa v;
    if (strcasecmp(s, "scalar") == 0) v = PA_ISA_SCALAR;
    else if (strcasecmp(s, "avx2") == 0) v = PA_ISA_AVX2;
    else if (strcasecmp(s, "avx512") == 0) v = PA_ISA_AVX512;
    else if (strcasecmp(s, "avx512bf16") == 0) v = PA_ISA_AVX512BF16;
    else return false;
    if (out != NULL) *out = v;
    return true;
}

#if defined(PA_HAVE_X86_KERNELS)
/* XCR0: which register states the OS saves (only valid when OSXSAVE is set). */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void probe(pa_isa *isa) {
    *isa = PA_ISA_SCALAR;
    unsigned a, b, c, d;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 7) return;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d)) return;
    bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return;
    uint64_t xcr0 = read_xcr0();
    bool ymm_ok = (xcr0 & 0x6) == 0x6;                  /* SSE + AVX state */
    bool zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;      /* opmask + ZMM_Hi256 + Hi16_ZMM */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    unsigned max_sub7 = a;
    bool avx2 = (b >> 5) & 1;
    bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    bool has_bf16 = false;
    if (max_sub7 >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) has_bf16 = (a >> 5) & 1;
    if (!(ymm_ok && avx2 && fma && f16c)) return;
    *isa = PA_ISA_AVX2;
    if (!(zmm_ok && f && bw && vl && dq)) return;
    *isa = has_bf16 ? PA_ISA_AVX512BF16 : PA_ISA_AVX512;
}
#else
static void probe(pa_isa *isa) { *isa = PA_ISA_SCALAR; }
#endif

static void cpu_init(void) {
    probe(&g_detected);
    pa_isa cap = g_detected;
    const char *env = getenv("PYACLNN_MAX_ISA");
    if (env != NULL && env[0] != '\0') {
        pa_isa want;
        if (!pa_isa_parse(env, &want)) {
            fprintf(stderr,
                    "pyaclnn: warning: ignoring PYACLNN_MAX_ISA=\"%s\" (expected scalar, avx2, avx512 or "
                    "avx512bf16)\n",
                    env);
        } else if (want > g_detected) {
            fprintf(stderr, "pyaclnn: warning: PYACLNN_MAX_ISA=%s is above what this CPU supports; using %s\n", env,
                    pa_isa_name(g_detected));
        } else {
            cap = want;
        }
    }
    g_default_cap = cap;
    atomic_store(&g_active, (int)cap);
}

pa_isa pa_cpu_detected_isa(void) {
    pthread_once(&g_once, cpu_init);
    return g_detected;
}

pa_isa pa_cpu_isa(void) {
    pthread_once(&g_once, cpu_init);
    return (pa_isa)atomic_load(&g_active);
}

bool pa_cpu_has_avx512bf16(void) {
    pthread_once(&g_once, cpu_init);
    return atomic_load(&g_active) == (int)PA_ISA_AVX512BF16;
}

bool pa_cpu_set_cap(const char *tier) {
    pthread_once(&g_once, cpu_init);
    if (tier == NULL) {
        atomic_store(&g_active, (int)g_default_cap);
        return true;
    }
    pa_isa want;
    if (!pa_isa_parse(tier, &want)) return false;
    if (want > g_detected) {
        fprintf(stderr, "pyaclnn: warning: ISA cap \"%s\" is above what this CPU supports; using %s\n", tier,
                pa_isa_name(g_detected));
        want = g_detected;
    }
    atomic_store(&g_active, (int)want);
    return true;
}
