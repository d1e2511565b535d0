// lowbit: the MX shift encoder, written once over the vector width: |x| * 2^-s rounded into an
// element format under any rounding but stochastic (the MXFP8 / MXFP6 elements outside
// mx_direct, E2M1 under the directed roundings, the NVFP4 block scales). Included once per width,
// inside that width's namespace (kernels/mx/avx2.hpp in block::avx2::detail, kernels/mx/avx512.hpp
// in block::avx512::detail), with V and LOWBIT_VEC_INLINE defined there as for
// kernels/convert/lanes.hpp, whose conventions it follows: no include guard, and empty when
// included on its own. What the widths do differently (a lane mask as a vector or a mask
// register) is in kernels/vec.hpp.
#ifdef LOWBIT_VEC_INLINE

// Per-block constants for scale exponent s, format F.
struct enc_block {
  V::vi ks;    // K + s: a float exponent field at or above it is a normal element
  V::vi cs;    // 23 - M + K + s
  V::vi tiny;  // |x| bit patterns below this scale to less than 2^-126 (or are float subnormals)
  V::vi s23;   // s << 23 (mx_direct)
};

template <class F>
LOWBIT_VEC_INLINE enc_block make_enc_block(V::vi s) {
  constexpr int M = F::mantissa_bits;
  constexpr int K = F::min_exponent + 127;
  const V::vi one = V::set1(1);
  enc_block e;
  e.ks = V::add(s, V::set1(K));
  e.cs = V::add(s, V::set1(23 - M + K));
  e.tiny = V::template slli<23>(V::max(V::add(s, one), one));
  e.s23 = V::template slli<23>(s);
  return e;
}

// a: |x| bit patterns (finite or Inf); neg: the lanes where x is negative (read by toward_pos_inf
// only). Returns the magnitude code of |x| * 2^-s, saturated at F::max_bits. With
// m2 = min(field, K + s): z = the significand with (field - m2) added to its exponent bits, and
// the code is z rounded at bit 23 - M + K + s - m2. Lanes below 2^-126 after scaling get a shift
// of at least 34 (s >= -100), which leaves 0 for the nearest modes and toward_zero whatever z
// holds; toward_pos_inf gives them the sticky z = 1 instead.
template <class F, rounding RM>
LOWBIT_VEC_INLINE V::vi encode_magnitude(V::vi a, V::mask neg, const enc_block& e) {
  static_assert(F::has_subnormals && F::min_exponent + 127 >= 1 && F::mantissa_bits <= 6,
                "element formats with subnormals");
  const V::vi one = V::set1(1);
  const V::vi m2 = V::min(V::template srli<23>(a), e.ks);
  V::vi z = V::add(V::sub(a, V::template slli<23>(m2)), V::set1(1u << 23));
  const V::vi shift = V::sub(e.cs, m2);
  V::vi n;
  if constexpr (RM == rounding::toward_zero) {
    n = V::srlv(z, shift);
  } else if constexpr (RM == rounding::toward_pos_inf) {
    z = V::select_gt(e.tiny, a, V::min_u(a, one), z);
    const V::vi rem_mask = V::sub(V::sllv(one, shift), one);  // all ones for shift >= 32
    n = V::add1_where_inexact(V::srlv(z, shift), z, rem_mask, neg);
  } else {
    // half - 1 (0 once shift > 32, where z < 2^24 cannot round up)
    const V::vi half_minus_one = V::srlv(V::set1(0x7FFFFFFF), V::sub(V::set1(32), shift));
    V::vi t = V::add(z, half_minus_one);
    if constexpr (RM == rounding::nearest_even) {
      t = V::add(t, V::and_(V::srlv(z, shift), one));
    } else if constexpr (RM == rounding::nearest_away) {
      t = V::add(t, one);
    } else {
      static_assert(RM == rounding::nearest_toward_zero, "stochastic rounding is not vectorized here");
    }
    n = V::srlv(t, shift);
  }
  return V::min_u(n, V::set1(F::max_bits));
}

#endif  // LOWBIT_VEC_INLINE
