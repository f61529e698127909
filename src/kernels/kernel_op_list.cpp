// The kernel op list's names and attribute schema, generated from the list (ctk_kernel_registry).
#include "ctk/kernels/kernel_op_list.h"

namespace ctk {

namespace {
template <typename T, typename Variant>
struct variant_index;
template <typename T, typename... Ts>
struct variant_index<T, std::variant<Ts...>> {
    static constexpr size_t value = [] {
        size_t i = 0;
        ((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
        return i;
    }();
};

constexpr const char* kOpNames[] = {
#define CTK_OP_NAME(name, attrs) #name,
    CTK_ALL_OPS(CTK_OP_NAME)
#undef CTK_OP_NAME
};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kNumOps);

constexpr size_t kOpAttrs[] = {
#define CTK_OP_ATTRS(name, attrs) variant_index<attrs, OpAttrs>::value,
    CTK_ALL_OPS(CTK_OP_ATTRS)
#undef CTK_OP_ATTRS
};
static_assert(sizeof(kOpAttrs) / sizeof(kOpAttrs[0]) == kNumOps);
}  // namespace

const char* op_name(OpKind op) {
    return kOpNames[static_cast<size_t>(op)];
}
size_t op_attrs_index(OpKind op) {
    return kOpAttrs[static_cast<size_t>(op)];
}

bool is_unary(OpKind op) {
    return static_cast<int>(op) < kNumUnaryOps;
}
bool is_binary(OpKind op) {
    int i = static_cast<int>(op);
    return i >= kNumUnaryOps && i < kNumUnaryOps + kNumBinaryOps;
}
bool is_reduction(OpKind op) {
    return op >= OpKind::reduce_sum && op <= OpKind::reduce_sum_square;
}

}  // namespace ctk
