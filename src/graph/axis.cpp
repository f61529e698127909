// Axis factories and comparisons (declared in ctk/graph/axis.h).
#include "ctk/graph/axis.h"

#include <atomic>

namespace ctk {

namespace {
const char* const kBatchAxisName = "defaultBatchAxis";
const char* const kSequenceAxisName = "defaultDynamicAxis";
}  // namespace

Axis Axis::default_batch_axis() {
    return Axis(Kind::dynamic, kBatchAxisName, false);
}
Axis Axis::default_dynamic_axis() {
    return Axis(Kind::dynamic, kSequenceAxisName, true);
}
Axis Axis::all_static_axes() {
    return Axis(Kind::all_static, "AllStaticAxes", false);
}
Axis Axis::all_axes() {
    return Axis(Kind::all, "AllAxes", false);
}
Axis Axis::dynamic(std::string name, bool ordered) {
    return Axis(Kind::dynamic, std::move(name), ordered);
}
Axis Axis::new_unique_dynamic_axis(const std::string& prefix, bool ordered) {
    static std::atomic<int64_t> counter{0};
    return Axis(Kind::dynamic, prefix + std::to_string(counter++), ordered);
}

bool Axis::is_batch() const {
    return kind_ == Kind::dynamic && name_ == kBatchAxisName;
}

bool Axis::operator==(const Axis& o) const {
    if (kind_ != o.kind_) return false;
    if (kind_ == Kind::static_axis) return index_ == o.index_;
    return name_ == o.name_;
}

std::string Axis::to_string() const {
    if (kind_ == Kind::static_axis) return "Axis(" + std::to_string(index_) + ")";
    return "Axis('" + name_ + "')";
}

}  // namespace ctk
