// The umbrella header: everything a ctk user needs.
#pragma once

#include "ctk/build_info.h"
#include "ctk/cuda.h"
#include "ctk/device.h"
#include "ctk/device_info.h"
#include "ctk/dtype.h"
#include "ctk/error.h"
#include "ctk/kernel_table.h"
#include "ctk/op.h"
#include "ctk/ops.h"
#include "ctk/parallel.h"
#include "ctk/rng.h"
#include "ctk/shape.h"
#include "ctk/storage.h"
#include "ctk/tensor.h"
