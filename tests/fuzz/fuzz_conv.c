/* The table fuzzer (fuzz_table.c) on the conv family only, with every tensor
 * given a random plain format (ND, NCL, NCHW, NCDHW, NDHWC, NHWC: the conv
 * and pooling ops check formats, which fuzz_table leaves ND), so the calls
 * get past the format rules and run their kernels.
 *
 *   cc -std=c11 -Itests/fuzz tests/fuzz/fuzz_conv.c -o fuzz_conv <link line>
 *   fuzz_conv [--seed S] [--cases N]      (N cases per operator)
 *
 * Exit status 0 iff no crash (run it against an ASan+UBSan build). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"

static uint64_t g_fmt_state = 88172645463325252ull;

static aclFormat random_plain_format(int64_t ndim) {
    g_fmt_state ^= g_fmt_state << 13, g_fmt_state ^= g_fmt_state >> 7, g_fmt_state ^= g_fmt_state << 17;
    const unsigned k = (unsigned)(g_fmt_state % 8);
    if (k == 0) return ACL_FORMAT_ND;
    if (k == 1) return ACL_FORMAT_NHWC;
    if (k == 2) return ACL_FORMAT_NDHWC;
    switch (ndim) {
    case 3: return ACL_FORMAT_NCL;
    case 4: return ACL_FORMAT_NCHW;
    case 5: return ACL_FORMAT_NCDHW;
    default: return ACL_FORMAT_ND;
    }
}

static aclTensor *fz_create_tensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                   const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                                   uint64_t storageDimsNum, void *tensorData) {
    (void)format;
    return aclCreateTensor(viewDims, viewDimsNum, dataType, stride, offset, random_plain_format((int64_t)viewDimsNum),
                           storageDims, storageDimsNum, tensorData);
}

#define aclCreateTensor fz_create_tensor
#define main fuzz_table_main
#include "fuzz_table.c"
#undef main
#undef aclCreateTensor

static const char *const k_mine[] = {"Convolution", "Im2col", "AvgPool2d", "MaxPool", "TriangularSolve"};

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int64_t cases = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc) cases = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--verbose")) g_verbose = true;
        else {
            fprintf(stderr, "usage: %s [--seed S] [--cases N] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    g_fmt_state ^= seed * 0x9e3779b97f4a7c15ull;
    g_c = mmap(NULL, sizeof *g_c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_c == MAP_FAILED) return 2;
    memset(g_c, 0, sizeof *g_c);
    int idx[8], n = 0;
    for (int k = 0; k < FZ_NOPS; k++) {
        for (size_t m = 0; m < sizeof k_mine / sizeof k_mine[0]; m++) {
            if (!strcmp(fz_ops[k].name, k_mine[m])) idx[n++] = k;
        }
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) _exit(3);
        aclrtStream stream;
        if (aclrtCreateStream(&stream) != ACL_SUCCESS) _exit(3);
        for (int64_t c = 0; c < cases; c++) {
            for (int j = 0; j < n; j++) {
                const int64_t cc = c * FZ_NOPS + idx[j];
                g_c->running = cc;
                run_case(cc, seed, stream);
            }
        }
        aclrtDestroyStream(stream);
        aclrtResetDevice(0);
        aclFinalize();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const bool crashed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("fuzz_conv: seed %llu, %lld cases per operator over %d operators: %llu run\n", (unsigned long long)seed,
           (long long)cases, n, (unsigned long long)g_c->cases);
    printf("  accepted %llu, rejected %llu; launched %llu, synchronized ok %llu, with an error %llu\n",
           (unsigned long long)g_c->accepted, (unsigned long long)g_c->rejected, (unsigned long long)g_c->launched,
           (unsigned long long)g_c->sync_ok, (unsigned long long)g_c->sync_err);
    for (int j = 0; j < n; j++) {
        printf("  %s: accepted %llu\n", fz_ops[idx[j]].name, (unsigned long long)g_c->per_op_ok[idx[j]]);
    }
    printf("accepted views past their storage: %llu\n", (unsigned long long)g_c->accepted_bad_view);
    if (crashed) {
        printf("crashes: 1 (case %lld, %s)\n", (long long)g_c->running, fz_ops[g_c->running % FZ_NOPS].name);
        return 1;
    }
    printf("crashes: 0\n");
    return g_c->accepted_bad_view == 0 ? 0 : 1;
}
