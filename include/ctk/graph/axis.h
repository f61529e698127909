// Axis: a static axis of a variable's sample shape (an index), or a named dynamic axis (the batch axis
// `#`, a sequence axis `*`), or one of CNTK's axis groups (all static axes, all axes).
#pragma once

#include <string>

namespace ctk {

class Axis {
public:
    enum class Kind : uint8_t { static_axis, dynamic, all_static, all };

    // Static axis `index` of the sample shape; negative counts from the end (as in CNTK's Python API).
    explicit Axis(int index) : kind_(Kind::static_axis), index_(index) {}

    static Axis default_batch_axis();    // "defaultBatchAxis" (`#`): unordered
    static Axis default_dynamic_axis();  // "defaultDynamicAxis" (`*`): the default sequence axis, ordered
    static Axis all_static_axes();
    static Axis all_axes();
    // A new sequence axis with a process-unique name ("<prefix>N").
    static Axis new_unique_dynamic_axis(const std::string& prefix, bool ordered = true);
    static Axis dynamic(std::string name, bool ordered = true);

    Kind kind() const { return kind_; }
    bool is_static() const { return kind_ == Kind::static_axis; }
    bool is_dynamic() const { return kind_ == Kind::dynamic; }
    bool is_batch() const;
    bool is_sequence() const { return is_dynamic() && !is_batch(); }
    int static_index() const { return index_; }
    const std::string& name() const { return name_; }
    bool is_ordered() const { return ordered_; }

    bool operator==(const Axis& o) const;
    bool operator!=(const Axis& o) const { return !(*this == o); }
    std::string to_string() const;  // "Axis(1)", "Axis('defaultBatchAxis')"

private:
    Axis(Kind kind, std::string name, bool ordered)
        : kind_(kind), name_(std::move(name)), ordered_(ordered) {}
    Kind kind_;
    int index_ = 0;
    std::string name_;
    bool ordered_ = false;
};

}  // namespace ctk
