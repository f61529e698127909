// Every graph op has a row in each model format: the graph harness's case for it (tests/graph/cases)
// survives a CNTK v2 file (written, read back, evaluated on the same data) and an ONNX export (through
// ONNX's checker and strict shape inference, then read back and evaluated on the same data), or the op
// is listed here as not supported by that format, and the lists stay exact.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "ctk/formats/model.h"
#include "formats/cntk_v2_internal.h"
#include "graph/graph_harness.h"

using namespace ctk;

namespace {

// Ops a CNTK v2 file holds without a row: a user function is CNTK's UserDefinedFunction entry (its state,
// no op number), written and read by the model saver and loader themselves.
const std::set<PrimitiveOp> kWithoutARow = {PrimitiveOp::user_function};

// Ops ONNX export refuses in every form, each with a NotImplementedError naming the op: CNTK-only
// criteria and sequence ops that ONNX's operator set has no counterpart for (export is by graph, without
// the dynamic sequence axis, which only recurrent loops carry through Scan), random ops, side effects.
const std::set<PrimitiveOp> kNotInOnnx = {
    PrimitiveOp::assign,
    PrimitiveOp::binary_cross_entropy,
    PrimitiveOp::constant_like,
    PrimitiveOp::cosine_distance,
    PrimitiveOp::cosine_distance_with_negative_samples,
    PrimitiveOp::crop,
    PrimitiveOp::edit_distance_error,
    PrimitiveOp::eye_like,
    PrimitiveOp::forward_backward,
    PrimitiveOp::lambda_rank,
    PrimitiveOp::ndcg_at_1,
    PrimitiveOp::random_distribution,
    PrimitiveOp::random_sample,
    PrimitiveOp::random_sample_inclusion_frequency,
    PrimitiveOp::roipooling,
    PrimitiveOp::sequence_broadcast_as,
    PrimitiveOp::sequence_first,
    PrimitiveOp::sequence_is_first,
    PrimitiveOp::sequence_last,
    PrimitiveOp::sequence_reduce_max,
    PrimitiveOp::sequence_reduce_sum,
    PrimitiveOp::sequence_slice,
    PrimitiveOp::sequence_softmax,
    PrimitiveOp::sequence_unpack,
    PrimitiveOp::to_sequence,
    PrimitiveOp::to_sequence_like,
    PrimitiveOp::unpack_batch,
    PrimitiveOp::unpooling,
    PrimitiveOp::user_function,
};
// Ops exported in their common forms whose other forms ONNX export refuses, naming why.
const std::set<PrimitiveOp> kSomeFormsNotInOnnx = {
    PrimitiveOp::convolution,      // a grouped kernel with every input channel (CNTK before 2.7)
    PrimitiveOp::gather,           // a per-sample reference
    PrimitiveOp::pad,              // symmetric padding (ONNX Pad has constant, reflect and edge)
    PrimitiveOp::past_value,       // an offset above 1 (ONNX Scan carries its state one frame)
    PrimitiveOp::splice,           // operands of different ranks or dynamic axes
    PrimitiveOp::transpose_times,  // a right operand that is not a static matrix
};

// The op an export error names ("op <name> (Function ...)"), or "" when it names none.
std::string refused_op(const std::string& message) {
    const std::string key = "op ";
    const size_t at = message.find(key);
    if (at == std::string::npos) return "";
    const size_t end = message.find(' ', at + key.size());
    return message.substr(at + key.size(),
                          end == std::string::npos ? std::string::npos : end - at - key.size());
}

std::string names(const std::set<PrimitiveOp>& ops) {
    std::string s;
    for (PrimitiveOp op : ops) s += (s.empty() ? "" : ", ") + std::string(primitive_op_name(op));
    return s;
}

}  // namespace

// Every graph op has a CNTK v2 row (save and load side by side in src/formats/cntk_v2_rows_*.cpp, or the
// extension row for ops CNTK had no form of); building the table refuses an op written by two rows and a
// CNTK op number read by two.
TEST(OpCoverage, EveryGraphOpHasACntkV2Row) {
    std::string missing;
    for (int i = 0; i < kNumPrimitiveOps; ++i) {
        const auto op = static_cast<PrimitiveOp>(i);
        if (kWithoutARow.count(op)) {
            EXPECT_EQ(formats::v2::row_for(op), nullptr)
                << primitive_op_name(op) << " has a row: take it off the list";
            continue;
        }
        if (formats::v2::row_for(op) == nullptr) missing += std::string(" ") + primitive_op_name(op);
    }
    EXPECT_EQ(missing, "") << "graph ops without a CNTK v2 row";
    // Every CNTK op number an op of the list carries is read by some row, but for CNTK's sequence
    // primitives that ctk's graph has only as whole ops (CNTK wrapped Where, GatherPacked and ScatterPacked
    // in blocks with PackedIndex) and UnpackSequence, whose mask output ctk's unpack lacks.
    const std::set<int> not_read = {13, 29, 30, 72};
    for (int i = 0; i < kNumPrimitiveOps; ++i) {
        const auto op = static_cast<PrimitiveOp>(i);
        const int cntk = cntk_op_type(op);
        if (cntk < 0 || op == PrimitiveOp::combine || op == PrimitiveOp::block) continue;
        if (not_read.count(cntk)) {
            EXPECT_EQ(formats::v2::row_reading(cntk), nullptr)
                << "CNTK op " << cntk << " is read: take it off";
            continue;
        }
        EXPECT_NE(formats::v2::row_reading(cntk), nullptr) << primitive_op_name(op) << ": CNTK op " << cntk;
    }
}

TEST(OpCoverage, EveryGraphOpSurvivesACntkV2File) {
    for (const test::GraphCase& c : test::cached_graph_cases()) {
        // User functions come back with the callbacks of the graph that was saved (found by uid).
        const std::string m = test::check_graph_round_trip(c, [](const FunctionPtr& f) {
            return deserialize_cntk_v2_model(serialize_cntk_v2_model(f), "<buffer>", live_user_functions(f));
        });
        if (!m.empty()) ADD_FAILURE() << m;
    }
}

TEST(OpCoverage, EveryGraphOpExportsToOnnxOrIsListed) {
    const std::string path = (std::filesystem::temp_directory_path() / "ctk_op_coverage.onnx").string();
    std::map<std::string, PrimitiveOp> by_name;
    for (int i = 0; i < kNumPrimitiveOps; ++i)
        by_name[primitive_op_name(static_cast<PrimitiveOp>(i))] = static_cast<PrimitiveOp>(i);
    std::set<PrimitiveOp> refused;
    for (const test::GraphCase& c : test::cached_graph_cases()) {
        try {
            save_onnx_model(test::build_case_graph(c, DataType::f32), path);  // runs ONNX's checker
        } catch (const NotImplementedError& e) {
            const std::string name = refused_op(e.what());
            auto op = by_name.find(name);
            if (op == by_name.end()) {
                ADD_FAILURE() << c.name << ": ONNX export refused without naming a graph op: " << e.what();
                continue;
            }
            refused.insert(op->second);
            EXPECT_TRUE(kNotInOnnx.count(op->second) || kSomeFormsNotInOnnx.count(op->second))
                << c.name << ": " << name << " does not export to ONNX and is not listed here: " << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << c.name << ": ONNX export threw " << e.what();
        }
    }
    std::filesystem::remove(path);
    std::set<PrimitiveOp> stale;
    for (const auto* list : {&kNotInOnnx, &kSomeFormsNotInOnnx})
        for (PrimitiveOp op : *list)
            if (!refused.count(op)) stale.insert(op);
    EXPECT_TRUE(stale.empty()) << "listed as not exported to ONNX, but every graph harness case with them "
                                  "exports (take them off the list): "
                               << names(stale);
}

// Graph harness cases whose ONNX files ctk's own ONNX import refuses (ctk's graphs batch the first axis
// of every input: an ONNX file that reduces over it, or multiplies by a per-sample matrix, asks for what
// ctk's import does not build).
const std::set<std::string> kOnnxImportRefuses = {
    "times/per_sample_matrices",    // MatMul with a batched right operand
    "reduce/sum_batch_axis",        // a reduction over the batch dimension
    "reduce/mean_all_axes_masked",  // the same, over all axes
};

TEST(OpCoverage, EveryExportedGraphReadsBackTheSame) {
    const std::string path = (std::filesystem::temp_directory_path() / "ctk_op_round_trip.onnx").string();
    std::set<std::string> refused;
    int exported = 0;
    for (const test::GraphCase& c : test::cached_graph_cases()) {
        try {
            save_onnx_model(test::build_case_graph(c, DataType::f32), path);
        } catch (const NotImplementedError&) {
            continue;  // listed by EveryGraphOpExportsToOnnxOrIsListed
        }
        ++exported;
        const std::string m = test::check_graph_round_trip(c, [&](const FunctionPtr& f) {
            save_onnx_model(f, path);
            return load_onnx_model(path);
        });
        if (m.empty()) continue;
        if (kOnnxImportRefuses.count(c.name) && m.find("load_onnx_model") != std::string::npos) {
            refused.insert(c.name);
            continue;
        }
        ADD_FAILURE() << "through ONNX and back: " << m;
    }
    std::filesystem::remove(path);
    EXPECT_GT(exported, 100);
    for (const std::string& name : kOnnxImportRefuses)
        EXPECT_TRUE(refused.count(name)) << name << " now reads back: take it off kOnnxImportRefuses";
}
