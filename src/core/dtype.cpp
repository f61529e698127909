// DataType names and sizes, and IEEE binary16 conversions (round to nearest even, subnormals, inf, NaN).
#include "ctk/core/dtype.h"

#include <cmath>

#include "ctk/core/error.h"

namespace ctk {

size_t size_of(DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return 4;
        case DataType::f64:
            return 8;
        case DataType::f16:
            return 2;
        case DataType::bf16:
            return 2;
        case DataType::i32:
            return 4;
        case DataType::i64:
            return 8;
        case DataType::u8:
            return 1;
    }
    return 0;
}

const char* dtype_name(DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return "float32";
        case DataType::f64:
            return "float64";
        case DataType::f16:
            return "float16";
        case DataType::bf16:
            return "bfloat16";
        case DataType::i32:
            return "int32";
        case DataType::i64:
            return "int64";
        case DataType::u8:
            return "uint8";
    }
    return "?";
}

bool is_floating(DataType dtype) {
    return dtype == DataType::f32 || dtype == DataType::f64 || dtype == DataType::f16 ||
           dtype == DataType::bf16;
}

DataType dtype_from_name(const std::string& name) {
    for (int i = 0; i < kNumDataTypes; ++i) {
        auto d = static_cast<DataType>(i);
        if (name == dtype_name(d)) return d;
    }
    if (name == "f32" || name == "float") return DataType::f32;
    if (name == "f64" || name == "double") return DataType::f64;
    if (name == "f16" || name == "half") return DataType::f16;
    if (name == "bf16") return DataType::bf16;
    CTK_THROW(ValueError, "unknown data type '", name, "'");
}

float half_bits_to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (mant == 0) {
            u = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 0x1f) {
        u = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t float_to_half_bits(float value) {
    uint32_t u;
    std::memcpy(&u, &value, 4);
    uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
    if (abs < 0x38800000u) {                 // below the smallest normal half (2^-14): subnormal or zero
        if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal (2^-25)
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp;  // the half subnormal field is mant * 2^(exp - 126)
        uint32_t result = mant >> (shift);
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
        return sign | static_cast<uint16_t>(result);
    }
    // normal: rebias the exponent, round the 13 dropped bits to nearest even
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

float double_to_float_round_to_odd(double value) {
    float f = static_cast<float>(value);
    if (std::isnan(value) || static_cast<double>(f) == value) return f;
    // Inexact: truncate toward zero, then set the last bit (the sticky bit) so that a later rounding at
    // fewer bits sees that something was dropped.
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::fabs(static_cast<double>(f)) > std::fabs(value)) --u;
    u |= 1u;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace ctk
