// launched_worker(): the launcher's environment variables (ctk/core/launcher.h).
#include "ctk/core/launcher.h"

#include <cstdlib>
#include <utility>

#include "ctk/core/error.h"

namespace ctk {

LaunchedWorker launched_worker() {
    auto read = [](const char* name) -> int64_t {
        const char* v = std::getenv(name);
        if (!v || !*v) return -1;
        char* end = nullptr;
        const long long n = std::strtoll(v, &end, 10);
        CTK_CHECK(*end == '\0' && n >= 0, ValueError, "the launcher set ", name, "='", v,
                  "', which is not a worker number");
        return n;
    };
    struct Names {
        const char* rank;
        const char* count;
        const char* local_rank;
    };
    LaunchedWorker w;
    for (const Names& names :
         {Names{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
          Names{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"}}) {
        const int64_t r = read(names.rank), n = read(names.count);
        if (r < 0 || n < 1) continue;
        CTK_CHECK(r < n, ValueError, "the launcher says this is worker ", r, " of ", n);
        w.rank = r;
        w.count = n;
        const int64_t local = read(names.local_rank);
        w.local_rank = local >= 0 ? local : r;
        w.by_launcher = true;
        break;
    }
    return w;
}

}  // namespace ctk
