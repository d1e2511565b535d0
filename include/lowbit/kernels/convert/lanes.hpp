// lowbit: the per-lane arithmetic of the conversion kernels, written once over the vector width.
// Included once per width, inside that width's namespace: kernels/convert/avx2.hpp includes it in
// lowbit::kernels::avx2::detail and kernels/convert/avx512.hpp in lowbit::kernels::avx512::detail,
// each with
//   V                  the width's traits (kernels/vec.hpp: w256, w512)
//   LOWBIT_VEC_INLINE  the width's force-inline target attribute (defined around the #include)
// and normal_range, direct_path and half_twin (avx2.hpp) visible. Hence no include guard: the
// body is compiled only where LOWBIT_VEC_INLINE is defined, and included on its own the header
// is empty (it is installed and checked like every other .hpp). What the two widths do
// differently (mask registers, the packing of codes into bytes) stays in their own files.
#ifdef LOWBIT_VEC_INLINE

// The magnitude codes of float32 bit patterns `b` (a = |b|) in format F, rounded but not yet
// limited: overflowing values, Inf and NaN give codes above max_bits. `r` holds the random bits
// of rounding::stochastic (ignored otherwise). Path 3 of both widths (avx2.hpp's header has the
// formulas), for any input, every rounding mode.
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi magnitude_lanes(V::vi b, V::vi a, V::vi r) {
  constexpr int M = F::mantissa_bits;
  constexpr int K = F::min_exponent + 127;
  static_assert(M <= 22, "the significand keeps at least one guard bit");
  static_assert(F::has_subnormals ? (K >= 1 && K <= 254) : (K == 0 && M == 0),
                "shapes covered: formats with subnormals, and E8M0-like scales (no subnormals, "
                "no mantissa, smallest value 2^-127)");
  const V::vi zero = V::set1(0);
  const V::vi one = V::set1(1);
  const V::vi field = V::template srli<23>(a);

  V::vi z;      // the value in units of 2^-shift ulps
  V::vi shift;  // bits of z below the format's ulp, 13..172
  if constexpr (F::has_subnormals) {
    const V::vi m = V::min(V::max(field, one), V::set1(K));
    z = V::sub(V::add(a, V::set1(1u << 23)), V::template slli<23>(m));
    shift = V::sub(V::set1(23 - M + K), m);
  } else {
    // E8M0: code = field, rounded on the mantissa. A float subnormal of 2^-127 or more rounds
    // between codes 0 and 1 on its own bit 22; anything smaller is the smallest value, code 0.
    const V::vi low = V::max(V::sub(a, V::set1(1u << 22)), zero);
    z = V::select_eq0(field, low, a);
    shift = V::select_eq0(field, V::set1(22), V::set1(23));
  }

  const V::vi n0 = V::srlv(z, shift);  // truncated; shifts of 32 or more give 0
  if constexpr (RM == rounding::nearest_even || RM == rounding::nearest_toward_zero) {
    // + (half - 1), + 1 more when the kept lsb is odd; half - 1 is 0 when shift > 32, where z is
    // below 2^24 and nothing can round up.
    const V::vi half_minus_one = V::srlv(V::set1(0x7FFFFFFF), V::sub(V::set1(32), shift));
    V::vi t = V::add(z, half_minus_one);
    if constexpr (RM == rounding::nearest_even) {
      // Without subnormals and mantissa the significand before rounding is always 1: odd.
      t = V::add(t, F::has_subnormals ? V::and_(n0, one) : one);
    }
    return V::srlv(t, shift);
  } else if constexpr (RM == rounding::nearest_away) {
    const V::vi half = V::sllv(one, V::sub(shift, one));  // 0 when shift > 32
    return V::srlv(V::add(z, half), shift);
  } else if constexpr (RM == rounding::toward_zero) {
    return n0;
  } else if constexpr (RM == rounding::toward_pos_inf) {
    // Up when any discarded bit is set and the value is positive (unsigned formats: always).
    const V::vi lost = V::or_(V::sllv(z, V::sub(V::set1(32), shift)), V::select_gt(shift, V::set1(32), z, zero));
    return V::add1_where_inexact(n0, lost, V::set1(0xFFFFFFFFu), F::is_signed ? V::negative(b) : V::no_lanes());
  } else {
    static_assert(RM == rounding::stochastic, "unknown rounding mode");
    // floor(discarded fraction * 2^32): the discarded bits moved to the top, or for shift > 32
    // (z < 2^24, all of it discarded) z moved down. Carry out of frac + r rounds up.
    const V::vi frac = V::or_(V::sllv(z, V::sub(V::set1(32), shift)), V::srlv(z, V::sub(shift, V::set1(32))));
    return V::add1_where_carry(n0, V::add(frac, r), r);
  }
}

// t = |x| + addend (+ lsb), addend = bias - mn plus, where the caller wants it, 2^M times 2^S
// (the code's base, so that t >> S is the code itself: direct_path).
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi normal_t(V::vi a, V::vi addend) {
  using nr = normal_range<F, RM>;
  const V::vi t = V::add(a, addend);
  if constexpr (RM != rounding::nearest_even) return t;
  return V::template add_bit<nr::S>(t, a);  // + bit S of |x|, the kept lsb
}

// Path 1's code of |x| = a (see direct_path in avx2.hpp). d0, d1, d2: the three constants of
// make_direct_setup, passed in rather than built here: built in the loop, GCC would rematerialise
// them for every block (two instructions each on the vector ports).
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi direct_code(V::vi a, V::vi d0, V::vi d1, V::vi d2) {
  using nr = normal_range<F, RM>;
  if constexpr (direct_path<F, RM>::exponent_only) {
    if constexpr (RM == rounding::toward_zero) return V::template srli<23>(a);
    return V::template srli<23>(V::sub_where_gt(V::add(a, d0), d1, a, d2));  // - 2^21 where a < 2^23
  } else {
    const V::vi normal = V::template srai<nr::S>(normal_t<F, RM>(a, d0));
    if constexpr (direct_path<F, RM>::K == 1) return normal;
    const V::vi y = V::add(V::min(a, d1), d2);
    return V::max(normal, RM == rounding::nearest_even ? V::cvtps(y) : V::cvttps(y));
  }
}

// Path 2's code of t = normal_t (avx2.hpp: fast_path), minus 2^M: t >> S, plus one under
// stochastic rounding where floor(discarded fraction * 2^32) + r carries out (codec.hpp's
// round_up).
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi fast_code(V::vi t, V::vi r) {
  using nr = normal_range<F, RM>;
  const V::vi c = V::template srli<nr::S>(t);
  if constexpr (RM != rounding::stochastic) return c;
  return V::add1_where_carry(c, V::add(V::template slli<32 - nr::S>(t), r), r);
}

// The magnitude code of |x| * 2^-s for an MX element (kernels/mx/avx2.hpp, mx_direct, says why it
// is exact there): path 1 on max(|x| - (s << 23), 0), saturated at the largest finite code.
// s23: s << 23. Its constants are built here: the MX kernels' block loops keep them in registers.
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi scaled_direct_code(V::vi a, V::vi s23) {
  constexpr avx2::detail::encode_setup d = avx2::detail::direct_setup<F, RM>();
  const V::vi scaled = V::max(V::sub(a, s23), V::set1(0));
  const V::vi n = direct_code<F, RM>(scaled, V::set1(d.direct[0]), V::set1(d.direct[1]), V::set1(d.direct[2]));
  return V::min_u(n, V::set1(F::max_bits));
}

// 16 (32) codes of a half_twin format, code << 8 in 16-bit lanes -> float16 patterns of value *
// 2^(bias - 15), NaN canonical. (E5M2 is float16's top byte already; its NaN codes are made
// canonical on the bytes, by e5m2_canonical_nan.)
// AtTop: the codes are at the top of their lanes already (code << (16 - bits); load_sextet_words).
template <class F, bool AtTop = false>
LOWBIT_VEC_INLINE V::vi half_twin_bits(V::vi high) {
  V::vi h;
  if constexpr (half_twin<F>::e5m2fnuz) {
    // Fields 2..31 are float16's 1..30 (the code << 8 minus 2^10); fields 0 and 1 (magnitudes
    // 0..7, m * 2^-17) are float16 subnormals, the magnitude << 7. The larger of the two is the one.
    const V::vi mag = V::and_(high, V::set1_16(0x7F00));
    const V::vi normal = V::sub16(mag, V::set1_16(0x0400));
    h = V::or_(V::max16(normal, V::template srli16<1>(mag)), V::and_(high, V::set1_16(0x8000)));
  } else {
    constexpr int shift = 5 - F::exponent_bits;  // the exponent field's top bit down to bit 14
    constexpr int up = 8 - F::bits;              // the sign up to bit 15 first (6-bit codes)
    constexpr std::uint16_t keep = static_cast<std::uint16_t>(~(((1u << shift) - 1u) << (15 - shift)));
    if constexpr (up > 0 && !AtTop) high = V::template slli16<up>(high);
    h = V::template srai16<shift>(high);
    if constexpr (shift > 0) h = V::and_(h, V::set1_16(keep));
  }
  if constexpr (F::specials == special_values::fnuz) {
    // The NaN code 0x80 lands on 0x8000 (-0); 0x8000 ^ 0xFE00 = 0x7E00.
    h = V::xor16_where_eq(h, h, V::set1_16(0x8000), V::set1_16(0xFE00));
  } else if constexpr (F::specials == special_values::fn) {
    // The NaN magnitude (all ones) lands on `at`; at ^ (at ^ 0x7E00) = 0x7E00.
    constexpr std::uint16_t at = static_cast<std::uint16_t>(F::magnitude_mask << (10 - F::mantissa_bits));
    h = V::xor16_where_eq(h, V::and_(h, V::set1_16(0x7FFF)), V::set1_16(at), V::set1_16(static_cast<std::uint16_t>(at ^ 0x7E00u)));
  }
  return h;
}

#endif  // LOWBIT_VEC_INLINE
