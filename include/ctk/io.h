// CNTK's readers (ctk_io): the MinibatchSource over deserializers (CTF, IDX, CIFAR-10, CBF, images) and the
// data sets `ctk data` writes. See docs/training.md and docs/images.md.
#pragma once

#include "ctk/io/cbf.h"               // IWYU pragma: export
#include "ctk/io/datasets.h"          // IWYU pragma: export
#include "ctk/io/image.h"             // IWYU pragma: export
#include "ctk/io/minibatch_source.h"  // IWYU pragma: export
