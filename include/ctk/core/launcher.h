// This process's place in a job that a launcher (mpiexec, srun) started, as the launcher announced it in
// the environment: read before any communicator exists, by the seeds, the default GPU and the profiler.
#pragma once

#include <cstdint>

namespace ctk {

// OpenMPI's OMPI_COMM_WORLD_RANK/SIZE (and OMPI_COMM_WORLD_LOCAL_RANK), else PMI_RANK/PMI_SIZE (MPICH's
// MPI_LOCALRANKID); rank 0 of 1 outside a launcher.
struct LaunchedWorker {
    int64_t rank = 0;
    int64_t count = 1;
    int64_t local_rank = 0;    // among the workers on this machine (the rank where the launcher says none)
    bool by_launcher = false;  // started by mpiexec (even as its only worker)
};
LaunchedWorker launched_worker();

}  // namespace ctk
