// Element data types, including the 16-bit floats f16 (IEEE binary16) and bf16 (bfloat16), with
// round-to-nearest-even conversions from float and from double (correctly rounded, not through float's
// rounding first: as CUDA's __double2half and __double2bfloat16 convert).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace ctk {

enum class DataType : uint8_t { f32, f64, f16, bf16, i32, i64, u8 };
inline constexpr int kNumDataTypes = 7;

size_t size_of(DataType dtype);
const char* dtype_name(DataType dtype);
bool is_floating(DataType dtype);
DataType dtype_from_name(const std::string& name);  // throws ValueError

// IEEE 754 binary16 stored as bits; arithmetic goes through float.
struct Half {
    uint16_t bits = 0;
    Half() = default;
    explicit Half(float value);
    static Half from_double(double value);
    explicit operator float() const;
    static Half from_bits(uint16_t b) {
        Half h;
        h.bits = b;
        return h;
    }
};

// bfloat16: the upper 16 bits of a float, rounded to nearest even; NaN stays NaN.
struct BFloat16 {
    uint16_t bits = 0;
    BFloat16() = default;
    explicit BFloat16(float value) {
        uint32_t u;
        std::memcpy(&u, &value, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN, keep the sign
        } else {
            u += 0x7fffu + ((u >> 16) & 1u);
            bits = static_cast<uint16_t>(u >> 16);
        }
    }
    static BFloat16 from_double(double value);
    explicit operator float() const {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    static BFloat16 from_bits(uint16_t b) {
        BFloat16 h;
        h.bits = b;
        return h;
    }
};

float half_bits_to_float(uint16_t bits);
uint16_t float_to_half_bits(float value);
// `value` rounded to a float with round-to-odd: rounding that to nearest-even at 16 bits gives the
// correctly rounded 16-bit value of the double (float keeps more than two extra bits).
float double_to_float_round_to_odd(double value);

inline Half Half::from_double(double value) {
    return Half(double_to_float_round_to_odd(value));
}
inline BFloat16 BFloat16::from_double(double value) {
    return BFloat16(double_to_float_round_to_odd(value));
}

inline Half::Half(float value) : bits(float_to_half_bits(value)) {}
inline Half::operator float() const {
    return half_bits_to_float(bits);
}

// Maps a C++ element type to its DataType.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
    static constexpr DataType value = DataType::f32;
};
template <>
struct dtype_of<double> {
    static constexpr DataType value = DataType::f64;
};
template <>
struct dtype_of<Half> {
    static constexpr DataType value = DataType::f16;
};
template <>
struct dtype_of<BFloat16> {
    static constexpr DataType value = DataType::bf16;
};
template <>
struct dtype_of<int32_t> {
    static constexpr DataType value = DataType::i32;
};
template <>
struct dtype_of<int64_t> {
    static constexpr DataType value = DataType::i64;
};
template <>
struct dtype_of<uint8_t> {
    static constexpr DataType value = DataType::u8;
};
template <typename T>
inline constexpr DataType dtype_v = dtype_of<T>::value;

// Calls fn(T{}) with T the C++ type of dtype.
template <typename Fn>
decltype(auto) visit_dtype(DataType dtype, Fn&& fn) {
    switch (dtype) {
        case DataType::f32:
            return fn(float{});
        case DataType::f64:
            return fn(double{});
        case DataType::f16:
            return fn(Half{});
        case DataType::bf16:
            return fn(BFloat16{});
        case DataType::i32:
            return fn(int32_t{});
        case DataType::i64:
            return fn(int64_t{});
        case DataType::u8:
            return fn(uint8_t{});
    }
    return fn(float{});
}

}  // namespace ctk
