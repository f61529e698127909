/* A tiny assertion kit for the C tests (plain C99, no test framework): a failed check prints where and
 * why, with ctk's last error, and the test exits non-zero at the end. */
#ifndef CTK_TESTS_C_CHECK_H
#define CTK_TESTS_C_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctk/c/ctk.h"

static int g_failures = 0;

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
                    ctk_last_error());                                                              \
            ++g_failures;                                                                           \
        }                                                                                           \
    } while (0)

/* A call that must succeed; stops the test when it does not (what follows would use its results). */
#define OK(call)                                                                                    \
    do {                                                                                            \
        ctk_status status_ = (call);                                                                \
        if (status_ != CTK_OK) {                                                                    \
            fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, (int)status_, \
                    ctk_last_error());                                                              \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

/* A call that must fail with `code` and a message containing `text`. */
#define FAILS(call, code, text)                                                                      \
    do {                                                                                             \
        ctk_status status_ = (call);                                                                 \
        if (status_ != (code) || strstr(ctk_last_error(), (text)) == NULL ||                         \
            ctk_last_error_code() != (code)) {                                                       \
            fprintf(stderr, "%s:%d: %s returned %d (want %d), message '%s' (want '%s')\n", __FILE__, \
                    __LINE__, #call, (int)status_, (int)(code), ctk_last_error(), (text));           \
            ++g_failures;                                                                            \
        }                                                                                            \
    } while (0)

#define NEAR(a, b, tol)                                                                                      \
    do {                                                                                                     \
        double a_ = (a), b_ = (b);                                                                           \
        if (!(fabs(a_ - b_) <= (tol))) {                                                                     \
            fprintf(stderr, "%s:%d: %s = %.9g, want %s = %.9g (tolerance %g)\n", __FILE__, __LINE__, #a, a_, \
                    #b, b_, (double)(tol));                                                                  \
            ++g_failures;                                                                                    \
        }                                                                                                    \
    } while (0)

static const ctk_device kCpu = {CTK_DEVICE_CPU, 0};

static int finish(const char* name) {
    if (g_failures == 0)
        printf("%s: all checks passed\n", name);
    else
        fprintf(stderr, "%s: %d checks failed\n", name, g_failures);
    return g_failures == 0 ? 0 : 1;
}

#endif
