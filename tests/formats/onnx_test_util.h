// Shared helpers for the ONNX tests: random inputs, a tiny protobuf writer for hand-made ModelProtos,
// and temporary model files.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "ctk/core/tensor.h"
#include "formats/formats_test_util.h"

namespace ctk::test {

inline Tensor random_tensor(const Dims& dims, uint32_t seed, DataType dtype = DataType::f32) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    Tensor t = Tensor::empty(Shape(dims), DataType::f64);
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(gen);
    return t.to(dtype);
}

// A tiny protobuf writer for hand-made ModelProtos.
struct Pb {
    std::string s;
    Pb& varint(uint64_t v) {
        while (v >= 0x80) {
            s.push_back(static_cast<char>((v & 0x7f) | 0x80));
            v >>= 7;
        }
        s.push_back(static_cast<char>(v));
        return *this;
    }
    Pb& i(int field, uint64_t v) { return varint(static_cast<uint64_t>(field) << 3).varint(v); }
    Pb& bytes(int field, const std::string& b) {
        varint((static_cast<uint64_t>(field) << 3) | 2).varint(b.size());
        s += b;
        return *this;
    }
    Pb& msg(int field, const Pb& m) { return bytes(field, m.s); }
};

inline std::string write_temp(const std::string& bytes, const std::string& name) {
    const std::string path = test::temp_dir("onnx_hostile") + "/" + name;
    test::write_file_bytes(path, bytes);
    return path;
}

}  // namespace ctk::test
