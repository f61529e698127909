// vector_math's AVX2 loops (this file is compiled with -mavx2 -mfma; called only where the CPU has them).
#include "kernels/cpu/vector_math_loops.h"

CTK_VMATH_TABLE(avx2_table, "avx2", 8, __m256, Sleef_expf8_u10avx2, Sleef_tanhf8_u10avx2)
