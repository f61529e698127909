// CNTK's profiler session (ctk/train/profiler.h) over the op profile: it starts, enables and stops the
// profile's timing and writes the summary, per training step (the Trainer's whole-step scope counts them).
#include "ctk/train/profiler.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "ctk/core/error.h"
#include "ctk/core/launcher.h"
#include "ctk/core/op_profile.h"
#include "train/step_profile.h"

namespace ctk {

namespace {
struct Session {
    std::mutex mutex;
    bool started = false;
    std::string dir;
};
Session& session() {
    static Session* s = new Session;  // never destroyed: a script may stop it during static destruction
    return *s;
}
}  // namespace

void start_profiler(const std::string& dir, bool sync_gpu, int64_t reserve_mem) {
    CTK_CHECK(!dir.empty(), ValueError, "start_profiler: the output folder is empty");
    CTK_CHECK(reserve_mem > 0, ValueError, "start_profiler: reserve_mem ", reserve_mem, " must be positive");
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.started = true;
    s.dir = dir;
    set_op_profile_gpu_sync(sync_gpu);
    set_op_profile(false);
    reset_op_profile();
}

void enable_profiler() {
    set_op_profile(true);
}

void disable_profiler() {
    set_op_profile(false);
}

bool profiler_started() {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.started;
}

std::string stop_profiler() {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    set_op_profile(false);
    set_op_profile_gpu_sync(false);
    if (!s.started) return "";
    s.started = false;
    const std::string step_label = std::string(detail::kStepProfileLabel) + " " + detail::kStepProfilePhase;
    int64_t steps = 0;
    for (const OpProfileEntry& e : op_profile())
        if (e.label == step_label) steps = e.calls;
    const std::string rank = std::to_string(launched_worker().rank);
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &local);
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(s.dir, ec);
    CTK_CHECK(!ec, IOError, "stop_profiler: cannot create the folder '", s.dir, "': ", ec.message());
    // Two sessions stopped within one second get two files.
    const std::string base = std::string(stamp) + "_summary_" + rank;
    fs::path path = fs::path(s.dir) / (base + ".txt");
    for (int k = 2; fs::exists(path); ++k) path = fs::path(s.dir) / (base + "_" + std::to_string(k) + ".txt");
    const fs::path tmp = path.string() + ".tmp";
    struct RemoveOnFailure {  // a summary that could not be finished leaves no .tmp behind
        const fs::path& file;
        bool keep = false;
        ~RemoveOnFailure() {
            std::error_code ignored;
            if (!keep) fs::remove(file, ignored);
        }
    } cleanup{tmp};
    {
        std::ofstream out(tmp);
        CTK_CHECK(out.good(), IOError, "stop_profiler: cannot write '", tmp.string(), "'");
        out << "ctk op profile, " << stamp << ", rank " << rank << ": "
            << (steps > 0 ? "per training step, over " + std::to_string(steps) + " steps"
                          : std::string("totals (no training step was profiled)"))
            << "\n"
            << op_profile_table(std::max<int64_t>(steps, 1));
        out.flush();
        CTK_CHECK(out.good(), IOError, "stop_profiler: writing '", tmp.string(), "' failed");
    }
    fs::rename(tmp, path, ec);
    CTK_CHECK(!ec, IOError, "stop_profiler: cannot rename '", tmp.string(), "' to '", path.string(),
              "': ", ec.message());
    cleanup.keep = true;
    reset_op_profile();
    return path.string();
}

}  // namespace ctk
