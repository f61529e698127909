// The kernel layer's umbrella (ctk_kernels over the CPU and CUDA backends): the kernel op list, the kernel
// table and dispatch, the eager tensor ops, fused recurrent cells, the CPU and GPU doctors.
#pragma once

#include "ctk/kernels/cell_program.h"    // IWYU pragma: export
#include "ctk/kernels/cpu_info.h"        // IWYU pragma: export
#include "ctk/kernels/device_info.h"     // IWYU pragma: export
#include "ctk/kernels/kernel_op_list.h"  // IWYU pragma: export
#include "ctk/kernels/kernel_table.h"    // IWYU pragma: export
#include "ctk/kernels/tensor_ops.h"      // IWYU pragma: export
