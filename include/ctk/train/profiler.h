// CNTK's profiler (cntk.debugging's start_profiler, enable_profiler, disable_profiler, stop_profiler): a
// session over the op profile (ctk/core/op_profile.h) that writes a summary per training step.
#pragma once

#include <cstdint>
#include <string>

namespace ctk {

// start_profiler() names the folder for the summary and clears the profile but times nothing yet, so a
// run's first epoch (data loading, cuDNN's algorithm searches) stays out: scripts call enable_profiler()
// after it, and TrainingSession enables it after its first checkpoint (after its first sweep when it
// writes none). sync_gpu: the host waits for the GPU at the end of each op, so host times hold the op's
// GPU work too (CNTK's default). reserve_mem, CNTK's event buffer, is accepted: ctk keeps totals, not
// events. stop_profiler() turns timing off and writes `<dir>/<timestamp>_summary_<rank>.txt` (rank:
// OMPI_COMM_WORLD_RANK or PMI_RANK, else 0) atomically, per training step when steps were timed, and
// returns its path ("" without a start).
void start_profiler(const std::string& dir = "profiler", bool sync_gpu = true,
                    int64_t reserve_mem = 33554432);
void enable_profiler();
void disable_profiler();
std::string stop_profiler();
bool profiler_started();

}  // namespace ctk
