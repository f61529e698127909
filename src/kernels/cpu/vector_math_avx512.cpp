// vector_math's AVX-512F loops (this file is compiled with -mavx512f; called only where the CPU has it).
#include "kernels/cpu/vector_math_loops.h"

CTK_VMATH_TABLE(avx512_table, "avx512f", 16, __m512, Sleef_expf16_u10avx512f, Sleef_tanhf16_u10avx512f)
