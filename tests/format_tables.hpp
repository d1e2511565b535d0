// lowbit tests: the value of every code of every small format, written by hand from the specs.
//
// Nothing here is computed by lowbit: each entry was typed from the format's definition, so a
// test that compares the library with these tables can fail. Sources:
//   OCP 8-bit Floating Point Specification (OFP8) 1.0, section 5 (E4M3 and E5M2);
//   OCP Microscaling Formats (MX) v1.0, section 5.3 (FP6 E2M3 and E3M2, FP4 E2M1, E8M0);
//   the FNUZ variants (GraphCore, AMD): OFP8 layout with bias + 1, 0x80 the only NaN, no -0, no Inf.
//
// Layout of a table: the codes 0x00, 0x01, ... in order. The 256-code formats list one binade
// (one exponent field value) per row and give only the codes with the sign bit clear; the codes
// with the sign bit set are the same magnitudes negated (see full_table below). Hexfloats are
// written the way the format stores them: for E4M3 the mantissa m in 0..7 is the hex digit 2m after
// the point (0x1.ap3 = (1 + 5/8) * 2^3), for E5M2 m in 0..3 is the digit 4m; subnormal rows use
// 0x0.<digit>p<emin>, so every column of a row shares the exponent of its row.
#ifndef LOWBIT_TESTS_FORMAT_TABLES_HPP
#define LOWBIT_TESTS_FORMAT_TABLES_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <lowbit/core/rounding.hpp>

namespace lowbit_test {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();
constexpr double Inf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// FP8 E4M3FN (OFP8 E4M3): S.EEEE.MMM, bias 7. No Inf; S.1111.111 is NaN. Codes 0x00..0x7F.
// Row E (exponent field): E = 0 is 0x0.<2m>p-6 (subnormal), E >= 1 is 0x1.<2m>p(E-7).
constexpr double e4m3fn_positive[128] = {
    0x0.0p-6, 0x0.2p-6, 0x0.4p-6, 0x0.6p-6, 0x0.8p-6, 0x0.ap-6, 0x0.cp-6, 0x0.ep-6,  // E=0  0x00
    0x1.0p-6, 0x1.2p-6, 0x1.4p-6, 0x1.6p-6, 0x1.8p-6, 0x1.ap-6, 0x1.cp-6, 0x1.ep-6,  // E=1  0x08
    0x1.0p-5, 0x1.2p-5, 0x1.4p-5, 0x1.6p-5, 0x1.8p-5, 0x1.ap-5, 0x1.cp-5, 0x1.ep-5,  // E=2  0x10
    0x1.0p-4, 0x1.2p-4, 0x1.4p-4, 0x1.6p-4, 0x1.8p-4, 0x1.ap-4, 0x1.cp-4, 0x1.ep-4,  // E=3  0x18
    0x1.0p-3, 0x1.2p-3, 0x1.4p-3, 0x1.6p-3, 0x1.8p-3, 0x1.ap-3, 0x1.cp-3, 0x1.ep-3,  // E=4  0x20
    0x1.0p-2, 0x1.2p-2, 0x1.4p-2, 0x1.6p-2, 0x1.8p-2, 0x1.ap-2, 0x1.cp-2, 0x1.ep-2,  // E=5  0x28
    0x1.0p-1, 0x1.2p-1, 0x1.4p-1, 0x1.6p-1, 0x1.8p-1, 0x1.ap-1, 0x1.cp-1, 0x1.ep-1,  // E=6  0x30
    1.0,      1.125,    1.25,     1.375,    1.5,      1.625,    1.75,     1.875,     // E=7  0x38
    2.0,      2.25,     2.5,      2.75,     3.0,      3.25,     3.5,      3.75,      // E=8  0x40
    4.0,      4.5,      5.0,      5.5,      6.0,      6.5,      7.0,      7.5,       // E=9  0x48
    8.0,      9.0,      10.0,     11.0,     12.0,     13.0,     14.0,     15.0,      // E=10 0x50
    16.0,     18.0,     20.0,     22.0,     24.0,     26.0,     28.0,     30.0,      // E=11 0x58
    32.0,     36.0,     40.0,     44.0,     48.0,     52.0,     56.0,     60.0,      // E=12 0x60
    64.0,     72.0,     80.0,     88.0,     96.0,     104.0,    112.0,    120.0,     // E=13 0x68
    128.0,    144.0,    160.0,    176.0,    192.0,    208.0,    224.0,    240.0,     // E=14 0x70
    256.0,    288.0,    320.0,    352.0,    384.0,    416.0,    448.0,    NaN,       // E=15 0x78
};

// ---------------------------------------------------------------------------------------------
// FP8 E5M2 (OFP8 E5M2): S.EEEEE.MM, bias 15, IEEE specials: S.11111.00 is Inf, S.11111.{01,10,11}
// NaN. Row E: E = 0 is 0x0.<4m>p-14 (subnormal), E >= 1 is 0x1.<4m>p(E-15). Codes 0x00..0x7F.
constexpr double e5m2_positive[128] = {
    0x0.0p-14, 0x0.4p-14, 0x0.8p-14, 0x0.cp-14,  // E=0  0x00
    0x1.0p-14, 0x1.4p-14, 0x1.8p-14, 0x1.cp-14,  // E=1  0x04
    0x1.0p-13, 0x1.4p-13, 0x1.8p-13, 0x1.cp-13,  // E=2  0x08
    0x1.0p-12, 0x1.4p-12, 0x1.8p-12, 0x1.cp-12,  // E=3  0x0C
    0x1.0p-11, 0x1.4p-11, 0x1.8p-11, 0x1.cp-11,  // E=4  0x10
    0x1.0p-10, 0x1.4p-10, 0x1.8p-10, 0x1.cp-10,  // E=5  0x14
    0x1.0p-9,  0x1.4p-9,  0x1.8p-9,  0x1.cp-9,   // E=6  0x18
    0x1.0p-8,  0x1.4p-8,  0x1.8p-8,  0x1.cp-8,   // E=7  0x1C
    0x1.0p-7,  0x1.4p-7,  0x1.8p-7,  0x1.cp-7,   // E=8  0x20
    0x1.0p-6,  0x1.4p-6,  0x1.8p-6,  0x1.cp-6,   // E=9  0x24
    0x1.0p-5,  0x1.4p-5,  0x1.8p-5,  0x1.cp-5,   // E=10 0x28
    0x1.0p-4,  0x1.4p-4,  0x1.8p-4,  0x1.cp-4,   // E=11 0x2C
    0x1.0p-3,  0x1.4p-3,  0x1.8p-3,  0x1.cp-3,   // E=12 0x30
    0x1.0p-2,  0x1.4p-2,  0x1.8p-2,  0x1.cp-2,   // E=13 0x34
    0x1.0p-1,  0x1.4p-1,  0x1.8p-1,  0x1.cp-1,   // E=14 0x38
    1.0,       1.25,      1.5,       1.75,       // E=15 0x3C
    2.0,       2.5,       3.0,       3.5,        // E=16 0x40
    4.0,       5.0,       6.0,       7.0,        // E=17 0x44
    8.0,       10.0,      12.0,      14.0,       // E=18 0x48
    16.0,      20.0,      24.0,      28.0,       // E=19 0x4C
    32.0,      40.0,      48.0,      56.0,       // E=20 0x50
    64.0,      80.0,      96.0,      112.0,      // E=21 0x54
    128.0,     160.0,     192.0,     224.0,      // E=22 0x58
    256.0,     320.0,     384.0,     448.0,      // E=23 0x5C
    512.0,     640.0,     768.0,     896.0,      // E=24 0x60
    1024.0,    1280.0,    1536.0,    1792.0,     // E=25 0x64
    2048.0,    2560.0,    3072.0,    3584.0,     // E=26 0x68
    4096.0,    5120.0,    6144.0,    7168.0,     // E=27 0x6C
    8192.0,    10240.0,   12288.0,   14336.0,    // E=28 0x70
    16384.0,   20480.0,   24576.0,   28672.0,    // E=29 0x74
    32768.0,   40960.0,   49152.0,   57344.0,    // E=30 0x78
    Inf,       NaN,       NaN,       NaN,        // E=31 0x7C
};

// ---------------------------------------------------------------------------------------------
// FP8 E4M3FNUZ: S.EEEE.MMM, bias 8, every magnitude finite; 0x80 (the -0 pattern) is the only
// NaN. Row E: E = 0 is 0x0.<2m>p-7, E >= 1 is 0x1.<2m>p(E-8). Codes 0x00..0x7F.
constexpr double e4m3fnuz_positive[128] = {
    0x0.0p-7, 0x0.2p-7, 0x0.4p-7, 0x0.6p-7, 0x0.8p-7, 0x0.ap-7, 0x0.cp-7, 0x0.ep-7,  // E=0  0x00
    0x1.0p-7, 0x1.2p-7, 0x1.4p-7, 0x1.6p-7, 0x1.8p-7, 0x1.ap-7, 0x1.cp-7, 0x1.ep-7,  // E=1  0x08
    0x1.0p-6, 0x1.2p-6, 0x1.4p-6, 0x1.6p-6, 0x1.8p-6, 0x1.ap-6, 0x1.cp-6, 0x1.ep-6,  // E=2  0x10
    0x1.0p-5, 0x1.2p-5, 0x1.4p-5, 0x1.6p-5, 0x1.8p-5, 0x1.ap-5, 0x1.cp-5, 0x1.ep-5,  // E=3  0x18
    0x1.0p-4, 0x1.2p-4, 0x1.4p-4, 0x1.6p-4, 0x1.8p-4, 0x1.ap-4, 0x1.cp-4, 0x1.ep-4,  // E=4  0x20
    0x1.0p-3, 0x1.2p-3, 0x1.4p-3, 0x1.6p-3, 0x1.8p-3, 0x1.ap-3, 0x1.cp-3, 0x1.ep-3,  // E=5  0x28
    0x1.0p-2, 0x1.2p-2, 0x1.4p-2, 0x1.6p-2, 0x1.8p-2, 0x1.ap-2, 0x1.cp-2, 0x1.ep-2,  // E=6  0x30
    0x1.0p-1, 0x1.2p-1, 0x1.4p-1, 0x1.6p-1, 0x1.8p-1, 0x1.ap-1, 0x1.cp-1, 0x1.ep-1,  // E=7  0x38
    1.0,      1.125,    1.25,     1.375,    1.5,      1.625,    1.75,     1.875,     // E=8  0x40
    2.0,      2.25,     2.5,      2.75,     3.0,      3.25,     3.5,      3.75,      // E=9  0x48
    4.0,      4.5,      5.0,      5.5,      6.0,      6.5,      7.0,      7.5,       // E=10 0x50
    8.0,      9.0,      10.0,     11.0,     12.0,     13.0,     14.0,     15.0,      // E=11 0x58
    16.0,     18.0,     20.0,     22.0,     24.0,     26.0,     28.0,     30.0,      // E=12 0x60
    32.0,     36.0,     40.0,     44.0,     48.0,     52.0,     56.0,     60.0,      // E=13 0x68
    64.0,     72.0,     80.0,     88.0,     96.0,     104.0,    112.0,    120.0,     // E=14 0x70
    128.0,    144.0,    160.0,    176.0,    192.0,    208.0,    224.0,    240.0,     // E=15 0x78
};

// ---------------------------------------------------------------------------------------------
// FP8 E5M2FNUZ: S.EEEEE.MM, bias 16, every magnitude finite; 0x80 is the only NaN.
// Row E: E = 0 is 0x0.<4m>p-15, E >= 1 is 0x1.<4m>p(E-16). Codes 0x00..0x7F.
constexpr double e5m2fnuz_positive[128] = {
    0x0.0p-15, 0x0.4p-15, 0x0.8p-15, 0x0.cp-15,  // E=0  0x00
    0x1.0p-15, 0x1.4p-15, 0x1.8p-15, 0x1.cp-15,  // E=1  0x04
    0x1.0p-14, 0x1.4p-14, 0x1.8p-14, 0x1.cp-14,  // E=2  0x08
    0x1.0p-13, 0x1.4p-13, 0x1.8p-13, 0x1.cp-13,  // E=3  0x0C
    0x1.0p-12, 0x1.4p-12, 0x1.8p-12, 0x1.cp-12,  // E=4  0x10
    0x1.0p-11, 0x1.4p-11, 0x1.8p-11, 0x1.cp-11,  // E=5  0x14
    0x1.0p-10, 0x1.4p-10, 0x1.8p-10, 0x1.cp-10,  // E=6  0x18
    0x1.0p-9,  0x1.4p-9,  0x1.8p-9,  0x1.cp-9,   // E=7  0x1C
    0x1.0p-8,  0x1.4p-8,  0x1.8p-8,  0x1.cp-8,   // E=8  0x20
    0x1.0p-7,  0x1.4p-7,  0x1.8p-7,  0x1.cp-7,   // E=9  0x24
    0x1.0p-6,  0x1.4p-6,  0x1.8p-6,  0x1.cp-6,   // E=10 0x28
    0x1.0p-5,  0x1.4p-5,  0x1.8p-5,  0x1.cp-5,   // E=11 0x2C
    0x1.0p-4,  0x1.4p-4,  0x1.8p-4,  0x1.cp-4,   // E=12 0x30
    0x1.0p-3,  0x1.4p-3,  0x1.8p-3,  0x1.cp-3,   // E=13 0x34
    0x1.0p-2,  0x1.4p-2,  0x1.8p-2,  0x1.cp-2,   // E=14 0x38
    0x1.0p-1,  0x1.4p-1,  0x1.8p-1,  0x1.cp-1,   // E=15 0x3C
    1.0,       1.25,      1.5,       1.75,       // E=16 0x40
    2.0,       2.5,       3.0,       3.5,        // E=17 0x44
    4.0,       5.0,       6.0,       7.0,        // E=18 0x48
    8.0,       10.0,      12.0,      14.0,       // E=19 0x4C
    16.0,      20.0,      24.0,      28.0,       // E=20 0x50
    32.0,      40.0,      48.0,      56.0,       // E=21 0x54
    64.0,      80.0,      96.0,      112.0,      // E=22 0x58
    128.0,     160.0,     192.0,     224.0,      // E=23 0x5C
    256.0,     320.0,     384.0,     448.0,      // E=24 0x60
    512.0,     640.0,     768.0,     896.0,      // E=25 0x64
    1024.0,    1280.0,    1536.0,    1792.0,     // E=26 0x68
    2048.0,    2560.0,    3072.0,    3584.0,     // E=27 0x6C
    4096.0,    5120.0,    6144.0,    7168.0,     // E=28 0x70
    8192.0,    10240.0,   12288.0,   14336.0,    // E=29 0x74
    16384.0,   20480.0,   24576.0,   28672.0,    // E=30 0x78
    32768.0,   40960.0,   49152.0,   57344.0,    // E=31 0x7C
};

// ---------------------------------------------------------------------------------------------
// FP6 E2M3 (OCP MX): S.EE.MMM, bias 1, no Inf/NaN. E = 0: m/8; E >= 1: (1 + m/8) * 2^(E-1).
constexpr double e2m3fn_all[64] = {
    0.0,  0.125, 0.25,  0.375, 0.5,  0.625, 0.75,  0.875,   // 0x00 E=0
    1.0,  1.125, 1.25,  1.375, 1.5,  1.625, 1.75,  1.875,   // 0x08 E=1
    2.0,  2.25,  2.5,   2.75,  3.0,  3.25,  3.5,   3.75,    // 0x10 E=2
    4.0,  4.5,   5.0,   5.5,   6.0,  6.5,   7.0,   7.5,     // 0x18 E=3
    -0.0, -0.125, -0.25, -0.375, -0.5, -0.625, -0.75, -0.875,  // 0x20
    -1.0, -1.125, -1.25, -1.375, -1.5, -1.625, -1.75, -1.875,  // 0x28
    -2.0, -2.25,  -2.5,  -2.75,  -3.0, -3.25,  -3.5,  -3.75,   // 0x30
    -4.0, -4.5,   -5.0,  -5.5,   -6.0, -6.5,   -7.0,  -7.5,    // 0x38
};

// FP6 E3M2 (OCP MX): S.EEE.MM, bias 3, no Inf/NaN. E = 0: m/16; E >= 1: (1 + m/4) * 2^(E-3).
constexpr double e3m2fn_all[64] = {
    0.0,   0.0625, 0.125, 0.1875,  // 0x00 E=0
    0.25,  0.3125, 0.375, 0.4375,  // 0x04 E=1
    0.5,   0.625,  0.75,  0.875,   // 0x08 E=2
    1.0,   1.25,   1.5,   1.75,    // 0x0C E=3
    2.0,   2.5,    3.0,   3.5,     // 0x10 E=4
    4.0,   5.0,    6.0,   7.0,     // 0x14 E=5
    8.0,   10.0,   12.0,  14.0,    // 0x18 E=6
    16.0,  20.0,   24.0,  28.0,    // 0x1C E=7
    -0.0,  -0.0625, -0.125, -0.1875,  // 0x20
    -0.25, -0.3125, -0.375, -0.4375,  // 0x24
    -0.5,  -0.625,  -0.75,  -0.875,   // 0x28
    -1.0,  -1.25,   -1.5,   -1.75,    // 0x2C
    -2.0,  -2.5,    -3.0,   -3.5,     // 0x30
    -4.0,  -5.0,    -6.0,   -7.0,     // 0x34
    -8.0,  -10.0,   -12.0,  -14.0,    // 0x38
    -16.0, -20.0,   -24.0,  -28.0,    // 0x3C
};

// FP4 E2M1 (OCP MX): S.EE.M, bias 1, no Inf/NaN.
constexpr double e2m1fn_all[16] = {
    0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,   // 0x0..0x7
    -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,  // 0x8..0xF
};

// ---------------------------------------------------------------------------------------------
// E8M0 (OCP MX scale): EEEEEEEE, unsigned, bias 127, no mantissa, no zero: code e is 2^(e-127);
// 0xFF is NaN. Row r holds codes 8r..8r+7.
constexpr double e8m0fnu_all[256] = {
    0x1p-127, 0x1p-126, 0x1p-125, 0x1p-124, 0x1p-123, 0x1p-122, 0x1p-121, 0x1p-120,  // 0x00
    0x1p-119, 0x1p-118, 0x1p-117, 0x1p-116, 0x1p-115, 0x1p-114, 0x1p-113, 0x1p-112,  // 0x08
    0x1p-111, 0x1p-110, 0x1p-109, 0x1p-108, 0x1p-107, 0x1p-106, 0x1p-105, 0x1p-104,  // 0x10
    0x1p-103, 0x1p-102, 0x1p-101, 0x1p-100, 0x1p-99,  0x1p-98,  0x1p-97,  0x1p-96,   // 0x18
    0x1p-95,  0x1p-94,  0x1p-93,  0x1p-92,  0x1p-91,  0x1p-90,  0x1p-89,  0x1p-88,   // 0x20
    0x1p-87,  0x1p-86,  0x1p-85,  0x1p-84,  0x1p-83,  0x1p-82,  0x1p-81,  0x1p-80,   // 0x28
    0x1p-79,  0x1p-78,  0x1p-77,  0x1p-76,  0x1p-75,  0x1p-74,  0x1p-73,  0x1p-72,   // 0x30
    0x1p-71,  0x1p-70,  0x1p-69,  0x1p-68,  0x1p-67,  0x1p-66,  0x1p-65,  0x1p-64,   // 0x38
    0x1p-63,  0x1p-62,  0x1p-61,  0x1p-60,  0x1p-59,  0x1p-58,  0x1p-57,  0x1p-56,   // 0x40
    0x1p-55,  0x1p-54,  0x1p-53,  0x1p-52,  0x1p-51,  0x1p-50,  0x1p-49,  0x1p-48,   // 0x48
    0x1p-47,  0x1p-46,  0x1p-45,  0x1p-44,  0x1p-43,  0x1p-42,  0x1p-41,  0x1p-40,   // 0x50
    0x1p-39,  0x1p-38,  0x1p-37,  0x1p-36,  0x1p-35,  0x1p-34,  0x1p-33,  0x1p-32,   // 0x58
    0x1p-31,  0x1p-30,  0x1p-29,  0x1p-28,  0x1p-27,  0x1p-26,  0x1p-25,  0x1p-24,   // 0x60
    0x1p-23,  0x1p-22,  0x1p-21,  0x1p-20,  0x1p-19,  0x1p-18,  0x1p-17,  0x1p-16,   // 0x68
    0x1p-15,  0x1p-14,  0x1p-13,  0x1p-12,  0x1p-11,  0x1p-10,  0x1p-9,   0x1p-8,    // 0x70
    0x1p-7,   0x1p-6,   0x1p-5,   0x1p-4,   0x1p-3,   0x1p-2,   0x1p-1,   0x1p+0,    // 0x78 (0x7F = 1)
    0x1p+1,   0x1p+2,   0x1p+3,   0x1p+4,   0x1p+5,   0x1p+6,   0x1p+7,   0x1p+8,    // 0x80
    0x1p+9,   0x1p+10,  0x1p+11,  0x1p+12,  0x1p+13,  0x1p+14,  0x1p+15,  0x1p+16,   // 0x88
    0x1p+17,  0x1p+18,  0x1p+19,  0x1p+20,  0x1p+21,  0x1p+22,  0x1p+23,  0x1p+24,   // 0x90
    0x1p+25,  0x1p+26,  0x1p+27,  0x1p+28,  0x1p+29,  0x1p+30,  0x1p+31,  0x1p+32,   // 0x98
    0x1p+33,  0x1p+34,  0x1p+35,  0x1p+36,  0x1p+37,  0x1p+38,  0x1p+39,  0x1p+40,   // 0xA0
    0x1p+41,  0x1p+42,  0x1p+43,  0x1p+44,  0x1p+45,  0x1p+46,  0x1p+47,  0x1p+48,   // 0xA8
    0x1p+49,  0x1p+50,  0x1p+51,  0x1p+52,  0x1p+53,  0x1p+54,  0x1p+55,  0x1p+56,   // 0xB0
    0x1p+57,  0x1p+58,  0x1p+59,  0x1p+60,  0x1p+61,  0x1p+62,  0x1p+63,  0x1p+64,   // 0xB8
    0x1p+65,  0x1p+66,  0x1p+67,  0x1p+68,  0x1p+69,  0x1p+70,  0x1p+71,  0x1p+72,   // 0xC0
    0x1p+73,  0x1p+74,  0x1p+75,  0x1p+76,  0x1p+77,  0x1p+78,  0x1p+79,  0x1p+80,   // 0xC8
    0x1p+81,  0x1p+82,  0x1p+83,  0x1p+84,  0x1p+85,  0x1p+86,  0x1p+87,  0x1p+88,   // 0xD0
    0x1p+89,  0x1p+90,  0x1p+91,  0x1p+92,  0x1p+93,  0x1p+94,  0x1p+95,  0x1p+96,   // 0xD8
    0x1p+97,  0x1p+98,  0x1p+99,  0x1p+100, 0x1p+101, 0x1p+102, 0x1p+103, 0x1p+104,  // 0xE0
    0x1p+105, 0x1p+106, 0x1p+107, 0x1p+108, 0x1p+109, 0x1p+110, 0x1p+111, 0x1p+112,  // 0xE8
    0x1p+113, 0x1p+114, 0x1p+115, 0x1p+116, 0x1p+117, 0x1p+118, 0x1p+119, 0x1p+120,  // 0xF0
    0x1p+121, 0x1p+122, 0x1p+123, 0x1p+124, 0x1p+125, 0x1p+126, 0x1p+127, NaN,       // 0xF8
};

// ---------------------------------------------------------------------------------------------
// How the codes with the sign bit set relate to the positive half of a 256-code table.
enum class negative_half {
  mirror,  // code 0x80 | c is -(value of c): -0, -NaN, -Inf included (OFP8 E4M3, E5M2)
  fnuz     // 0x80 is NaN (no -0); 0x80 | c for c != 0 is -(value of c)
};

// All 256 codes of a signed 8-bit format from its positive half.
inline std::array<double, 256> full_table(const double (&positive)[128], negative_half rule) {
  std::array<double, 256> t{};
  for (std::size_t c = 0; c < 128; ++c) {
    t[c] = positive[c];
    t[c + 128] = -positive[c];
  }
  if (rule == negative_half::fnuz) t[0x80] = NaN;
  return t;
}

// ---------------------------------------------------------------------------------------------
// float16 and bfloat16 are too large to type out; their values come from the definition of the
// format, decoded here with plain arithmetic (not with lowbit). Valid for the finite codes only.
//   binary16: S.EEEEE.MMMMMMMMMM, bias 15: E = 0 is m * 2^-24, else (1024 + m) * 2^(E-25).
//   bfloat16: S.EEEEEEEE.MMMMMMM, bias 127: E = 0 is m * 2^-133, else (128 + m) * 2^(E-134).
inline double float16_value(std::uint32_t code) {
  const int e = static_cast<int>((code >> 10) & 0x1Fu);
  const double m = static_cast<double>(code & 0x3FFu);
  const double magnitude = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, e - 25);
  return (code & 0x8000u) != 0 ? -magnitude : magnitude;
}
inline double bfloat16_value(std::uint32_t code) {
  const int e = static_cast<int>((code >> 7) & 0xFFu);
  const double m = static_cast<double>(code & 0x7Fu);
  const double magnitude = e == 0 ? std::ldexp(m, -133) : std::ldexp(128.0 + m, e - 134);
  return (code & 0x8000u) != 0 ? -magnitude : magnitude;
}

// =============================================================================================
// The reference rounding: slow, obvious, and independent of lowbit's codec.
//
// A format is the increasing list of its finite non-negative values (from the tables above) and
// the hand-written codes of its special results. Rounding |x| means finding the floor index i,
// value[i] <= |x| < value[i+1], then choosing i or i+1 by the rounding rule. One more value sits
// after max: beyond_max = max + ulp(max), where the format would continue if its exponent range
// did not end. A result of index n (= beyond_max) is an overflow.
// =============================================================================================

struct ref_format {
  const char* name = "";
  std::vector<double> value;       // finite values >= 0 (+0 included), increasing
  std::vector<std::uint32_t> code;  // code[i] is the code of value[i]
  std::vector<double> ext;          // value, then beyond_max, then +Inf: ext[i+1] is always defined
  double beyond_max = 0;
  std::uint32_t sign_mask = 0;      // 0 for an unsigned format (E8M0), which converts |x|
  bool has_negative_zero = false;
  bool ties_up = false;             // E8M0: see make_e8m0fnu
  std::uint32_t nan_code = 0;       // what a NaN input becomes (lowbit's default: positive)
  std::uint32_t overflow_pos = 0;   // overflow and +Inf under overflow::non_saturate
  std::uint32_t overflow_neg = 0;   // the same for negative values
  std::uint32_t max_code() const { return code.back(); }
  int n() const { return static_cast<int>(value.size()); }
};

// Builds a ref_format from a table of every code (NaN/Inf entries and negative codes skipped).
inline ref_format make_ref(const char* name, const double* table, std::size_t codes, double beyond_max,
                           std::uint32_t sign_mask, bool has_negative_zero, std::uint32_t nan_code,
                           std::uint32_t overflow_pos, std::uint32_t overflow_neg, bool ties_up = false) {
  ref_format f;
  f.name = name;
  std::vector<std::pair<double, std::uint32_t>> v;
  for (std::size_t c = 0; c < codes; ++c)
    if (std::isfinite(table[c]) && !std::signbit(table[c])) v.emplace_back(table[c], static_cast<std::uint32_t>(c));
  std::sort(v.begin(), v.end());
  for (const auto& e : v) {
    f.value.push_back(e.first);
    f.code.push_back(e.second);
  }
  f.beyond_max = beyond_max;
  f.ext = f.value;
  f.ext.push_back(beyond_max);
  f.ext.push_back(Inf);
  f.sign_mask = sign_mask;
  f.has_negative_zero = has_negative_zero;
  f.ties_up = ties_up;
  f.nan_code = nan_code;
  f.overflow_pos = overflow_pos;
  f.overflow_neg = overflow_neg;
  return f;
}

// The special codes below are those of lowbit's default policy (NVIDIA's conversions):
// NaN -> the positive all-ones NaN (fnuz: 0x80; FP6/FP4, which have no NaN: +max); non-saturating
// overflow -> +-Inf (IEEE formats), +-NaN keeping the value's sign (E4M3FN), 0x80 (fnuz), +-max
// (FP6/FP4, which have neither), 0xFF (E8M0, unsigned).
inline ref_format make_e4m3fn() {
  static const std::array<double, 256> t = full_table(e4m3fn_positive, negative_half::mirror);
  return make_ref("float8_e4m3fn", t.data(), 256, 480.0, 0x80, true, 0x7F, 0x7F, 0xFF);
}
inline ref_format make_e5m2() {
  static const std::array<double, 256> t = full_table(e5m2_positive, negative_half::mirror);
  return make_ref("float8_e5m2", t.data(), 256, 65536.0, 0x80, true, 0x7F, 0x7C, 0xFC);
}
inline ref_format make_e4m3fnuz() {
  static const std::array<double, 256> t = full_table(e4m3fnuz_positive, negative_half::fnuz);
  return make_ref("float8_e4m3fnuz", t.data(), 256, 256.0, 0x80, false, 0x80, 0x80, 0x80);
}
inline ref_format make_e5m2fnuz() {
  static const std::array<double, 256> t = full_table(e5m2fnuz_positive, negative_half::fnuz);
  return make_ref("float8_e5m2fnuz", t.data(), 256, 65536.0, 0x80, false, 0x80, 0x80, 0x80);
}
inline ref_format make_e2m3fn() { return make_ref("float6_e2m3fn", e2m3fn_all, 64, 8.0, 0x20, true, 0x1F, 0x1F, 0x3F); }
inline ref_format make_e3m2fn() { return make_ref("float6_e3m2fn", e3m2fn_all, 64, 32.0, 0x20, true, 0x1F, 0x1F, 0x3F); }
inline ref_format make_e2m1fn() { return make_ref("float4_e2m1fn", e2m1fn_all, 16, 8.0, 0x8, true, 0x7, 0x7, 0xF); }
// E8M0's ties go up. A tie lies halfway between 2^e and 2^(e+1), at 1.5 * 2^e (the linear
// midpoint, as in ml_dtypes and PyTorch); "ties to even" means ties to the even significand, and
// E8M0's significand is always the implicit 1, odd, so rounding it to nearest-even always carries
// into the exponent. The parity of the code (the exponent) plays no part.
inline ref_format make_e8m0fnu() {
  return make_ref("float8_e8m0fnu", e8m0fnu_all, 256, 0x1p128, 0, false, 0xFF, 0xFF, 0xFF, true);
}
inline ref_format make_float16() {
  static const std::vector<double> t = [] {
    std::vector<double> v(0x7C00);
    for (std::uint32_t c = 0; c < 0x7C00; ++c) v[c] = float16_value(c);
    return v;
  }();
  return make_ref("float16", t.data(), t.size(), 65536.0, 0x8000, true, 0x7FFF, 0x7C00, 0xFC00);
}
inline ref_format make_bfloat16() {
  static const std::vector<double> t = [] {
    std::vector<double> v(0x7F80);
    for (std::uint32_t c = 0; c < 0x7F80; ++c) v[c] = bfloat16_value(c);
    return v;
  }();
  return make_ref("bfloat16", t.data(), t.size(), 0x1p128, 0x8000, true, 0x7FFF, 0x7F80, 0xFF80);
}

// The floor index of ax >= 0 in f.ext: -1 below the smallest value (E8M0 only, which has no
// zero), n at or above beyond_max. Binary search; the exhaustive sweeps walk it instead.
inline int floor_index(const ref_format& f, double ax) {
  return static_cast<int>(std::upper_bound(f.ext.begin(), f.ext.end(), ax) - f.ext.begin()) - 1;
}

// Chooses between value[i] and value[i+1] for the magnitude ax, where i = floor_index(f, ax).
// `negative` is the sign as the format sees it (false for E8M0) and matters only to
// toward_pos_inf, which rounds a negative value's magnitude down. r: the stochastic random bits.
inline int ref_round_index(const ref_format& f, int i, double ax, bool negative, lowbit::rounding rm,
                           std::uint32_t r) {
  const int n = f.n();
  if (i < 0) return 0;   // below 2^-127 in E8M0: there is no zero, the smallest value in every mode
  if (i >= n) return n;  // at or beyond beyond_max: overflow in every mode (the caller handles it)
  const double lo = f.ext[i];
  const double hi = f.ext[i + 1];  // beyond_max when i = n - 1
  if (ax == lo) return i;          // exact: every mode keeps it
  // lo < ax < hi. The midpoint is exact in double: lo and hi have at most 11 significant bits.
  const double mid = lo + (hi - lo) / 2;
  switch (rm) {
    case lowbit::rounding::toward_zero: return i;
    case lowbit::rounding::toward_pos_inf: return negative ? i : i + 1;
    case lowbit::rounding::nearest_even:
    case lowbit::rounding::nearest_away:
    case lowbit::rounding::nearest_toward_zero:
      if (ax < mid) return i;
      if (ax > mid) return i + 1;
      if (rm == lowbit::rounding::nearest_away) return i + 1;
      if (rm == lowbit::rounding::nearest_toward_zero) return i;
      if (f.ties_up) return i + 1;
      // Adjacent values have adjacent codes (code[i+1] = code[i] + 1, and beyond_max would be
      // max_code + 1), and the code's last bit is the significand's last bit: the even one wins.
      return (f.code[i] & 1u) == 0 ? i : i + 1;
    case lowbit::rounding::stochastic: {
      // Up iff floor(frac * 2^32) + r >= 2^32, frac = (ax - lo) / (hi - lo). All exact in double:
      // lo <= ax < hi <= 2 lo (or lo = 0), so ax - lo is exact (Sterbenz); hi - lo is one ulp of
      // the format, a power of two, so the division and the scaling by 2^32 only move the exponent
      // (frac >= 2^-1074 / 2^-133 stays far from double underflow), and floor of an exact value
      // below 2^32 is exact.
      const double frac = (ax - lo) / (hi - lo);
      const std::uint64_t frac32 = static_cast<std::uint64_t>(std::floor(frac * 0x1p32));
      return frac32 + r >= (std::uint64_t{1} << 32) ? i + 1 : i;
    }
  }
  return i;
}

// The code of index j (n: overflow) with the input's sign applied.
inline std::uint32_t ref_code(const ref_format& f, int j, bool negative, lowbit::overflow ov, lowbit::rounding rm) {
  const bool neg = negative && f.sign_mask != 0;
  if (j >= f.n()) {
    // IEEE 754 section 7.4: rounding toward zero, or toward +Inf for a negative value, never
    // overflows to Inf; saturation clamps always.
    const bool to_max = ov == lowbit::overflow::saturate || rm == lowbit::rounding::toward_zero ||
                        (rm == lowbit::rounding::toward_pos_inf && neg);
    if (to_max) return (neg ? f.sign_mask : 0u) | f.max_code();
    return neg ? f.overflow_neg : f.overflow_pos;
  }
  const std::uint32_t c = f.code[static_cast<std::size_t>(j)];
  // -0 exists except in fnuz (and unsigned) formats, where a negative underflow gives +0 = 0x00.
  if (neg && (c != 0 || f.has_negative_zero)) return c | f.sign_mask;
  return c;
}

// The whole reference conversion of one value (float, or double: both are exact in double).
inline std::uint32_t ref_encode(const ref_format& f, double x, lowbit::overflow ov, lowbit::rounding rm,
                                std::uint32_t r = 0) {
  if (std::isnan(x)) return f.nan_code;
  const bool negative = std::signbit(x);
  const bool neg = negative && f.sign_mask != 0;
  if (std::isinf(x)) {  // Inf is exact, not an overflow: only saturation changes it (to +-max)
    if (ov == lowbit::overflow::saturate) return (neg ? f.sign_mask : 0u) | f.max_code();
    return neg ? f.overflow_neg : f.overflow_pos;
  }
  const double ax = std::fabs(x);
  const int j = ref_round_index(f, floor_index(f, ax), ax, neg, rm, r);
  return ref_code(f, j, negative, ov, rm);
}

// A well-mixed 32-bit hash (the murmur3 finaliser), for per-input stochastic random bits.
inline std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

}  // namespace lowbit_test

#endif  // LOWBIT_TESTS_FORMAT_TABLES_HPP
