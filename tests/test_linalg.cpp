// Tests of linalg/ (docs/linalg.md): every routine against plain float64 loops written here, on
// every kernel (scalar, AVX2 and AVX-512 where the CPU has it, through lowbit::scoped_isa and
// set_linalg_avx512), with odd sizes, every transpose,
// leading dimensions wider than the rows, alpha/beta edge values, determinism with 1 and 2
// threads through linalg_exec, and the argument checks of docs/api.md.
//
// Error bounds (u = 2^-24, unit roundoff of float32), from Higham, Accuracy and Stability of
// Numerical Algorithms (2nd ed.):
// - gemm / syrk: each C element is a sum of k products accumulated by FMAs in one chain per depth
//   slice (kc = 256 on every kernel; the tests count slices of 128, an upper bound), the slices added to C in order, alpha and beta applied once per slice: at most
//   k + 2 * slices + 2 roundings, so |C - C_exact| <= (k + 2 * slices + 2) u (|alpha| |A||B| +
//   |beta| |C0|) elementwise, to first order (Higham 3.5). Tested with a factor 1.01 for the
//   second-order terms.
// - cholesky: U^T U = A + dA with |dA| <= gamma_{n+1} |U^T||U| (Higham thm 10.3); the blocked
//   algorithm does the same operations in another order, so the same bound holds with the same
//   count of roundings per element. Tested with 2 (n + 2) u.
// - triangular_solve: (T + dT) X = B with |dT| <= gamma_n |T| (Higham thm 8.5), hence the
//   residual |T X - B| <= gamma_n |T||X|; the blocked solve adds one rounding per block update:
//   tested with 2 (n + 2) u.
// - cholesky_inverse: two solves and the factor, on matrices of condition number below 10: the
//   forward error is at most about kappa * 3 gamma_n relative to max|A^-1|; tested with
//   40 (n + 2) u.
#include <gtest/gtest.h>

#include <lowbit/linalg.hpp>
#include <lowbit/linalg/std_thread_exec.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support.hpp"

namespace {

using lowbit::errc;
using lowbit::isa;
using lowbit::matrix_op;
using lowbit::triangle;

constexpr double u32 = 1.0 / 16777216.0;  // 2^-24

// The kernels: scalar, AVX2, and AVX-512 where the CPU has it (the avx512 path, unless
// set_linalg_avx512(false)).
struct kernel_path {
  isa path;
  bool avx512;
  const char* name;
};
std::vector<kernel_path> paths() {
  std::vector<kernel_path> p{{isa::scalar, false, "scalar"}};
  if (lowbit_test::have_avx2()) {
    p.push_back({isa::avx2, false, "avx2"});
    if (lowbit::is_supported(isa::avx512) && LOWBIT_HAS_AVX512_LINALG) p.push_back({isa::avx512, true, "avx512"});
  }
  return p;
}
class scoped_path {
 public:
  explicit scoped_path(kernel_path p) : isa_(p.path), previous_(lowbit::set_linalg_avx512(p.avx512)) {
    EXPECT_STREQ(lowbit::linalg_kernel_name(), p.name);
  }
  ~scoped_path() { (void)lowbit::set_linalg_avx512(previous_); }
  scoped_path(const scoped_path&) = delete;
  scoped_path& operator=(const scoped_path&) = delete;

 private:
  lowbit::scoped_isa isa_;
  bool previous_;
};

std::vector<float> uniform(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A logical m x k matrix stored as op says, with leading dimension = stored cols + pad.
struct stored {
  std::vector<float> data;
  std::size_t ld = 0;
};
stored store(const std::vector<float>& logical, std::size_t rows, std::size_t cols, matrix_op op, std::size_t pad) {
  const bool t = op == matrix_op::transpose;
  const std::size_t srows = t ? cols : rows, scols = t ? rows : cols;
  stored s;
  s.ld = scols + pad;
  s.data.assign(srows * s.ld + 1, std::numeric_limits<float>::quiet_NaN());  // padding is NaN: never read
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) (t ? s.data[j * s.ld + i] : s.data[i * s.ld + j]) = logical[i * cols + j];
  return s;
}

// ---------------------------------------------------------------------------------------------
// gemm

struct gemm_case {
  std::size_t m, n, k;
};

// A B in float64, and |A||B| for the error bound.
struct product64 {
  std::vector<double> value, magnitude;
};
product64 multiply64(const std::vector<float>& a, const std::vector<float>& b, gemm_case g) {
  product64 r{std::vector<double>(g.m * g.n, 0.0), std::vector<double>(g.m * g.n, 0.0)};
  for (std::size_t i = 0; i < g.m; ++i) {
    double* acc = &r.value[i * g.n];
    double* mag = &r.magnitude[i * g.n];
    for (std::size_t p = 0; p < g.k; ++p) {
      const double x = a[i * g.k + p];
      const float* brow = &b[p * g.n];
      for (std::size_t j = 0; j < g.n; ++j) {
        acc[j] += x * brow[j];
        mag[j] += std::fabs(x * brow[j]);
      }
    }
  }
  return r;
}

// C (m x n, ldc) against alpha A B + beta C0 in float64, elementwise bound of the header.
void expect_gemm_close(const product64& ab, const std::vector<float>& c0, const std::vector<float>& c, std::size_t ldc,
                       gemm_case g, float alpha, float beta) {
  const double slices = std::ceil(static_cast<double>(g.k) / 128.0);
  const double factor = 1.01 * (static_cast<double>(g.k) + 2.0 * slices + 2.0) * u32;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < g.m; ++i)
    for (std::size_t j = 0; j < g.n; ++j) {
      const double c0v = beta == 0.0f ? 0.0 : static_cast<double>(c0[i * ldc + j]);
      const double want = alpha * ab.value[i * g.n + j] + beta * c0v;
      const double bound = factor * (std::fabs(alpha) * ab.magnitude[i * g.n + j] + std::fabs(beta * c0v)) + 1e-37;
      const double got = c[i * ldc + j];
      if (!(std::fabs(got - want) <= bound) && bad++ < 5)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", want " << want << " +- " << bound;
    }
  EXPECT_EQ(bad, 0u) << "m " << g.m << " n " << g.n << " k " << g.k;
}

void run_gemm(gemm_case g, matrix_op oa, matrix_op ob, float alpha, float beta, std::size_t pad, kernel_path path,
              unsigned seed) {
  SCOPED_TRACE(testing::Message() << path.name << " m " << g.m << " n " << g.n << " k " << g.k
                                  << " opA " << int(oa) << " opB " << int(ob) << " alpha " << alpha << " beta "
                                  << beta << " pad " << pad);
  const std::vector<float> a = uniform(g.m * g.k, seed), b = uniform(g.k * g.n, seed + 1);
  const stored sa = store(a, g.m, g.k, oa, pad), sb = store(b, g.k, g.n, ob, pad);
  const std::size_t ldc = g.n + pad;
  std::vector<float> c0 = uniform(g.m * ldc, seed + 2);
  if (beta == 0.0f) std::fill(c0.begin(), c0.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> c = c0;
  lowbit::gemm_options o;
  o.op_a = oa;
  o.op_b = ob;
  o.alpha = alpha;
  o.beta = beta;
  scoped_path s(path);
  ASSERT_EQ(lowbit::gemm(sa.data.data(), sa.ld, sb.data.data(), sb.ld, g.m, g.n, g.k, o, c.data(), ldc), errc::ok);
  expect_gemm_close(multiply64(a, b, g), c0, c, ldc, g, alpha, beta);
  for (std::size_t i = 0; i < g.m; ++i)  // the padding of C is never written
    for (std::size_t j = g.n; j < ldc; ++j)
      if (beta != 0.0f) ASSERT_EQ(lowbit_test::float_bits(c[i * ldc + j]), lowbit_test::float_bits(c0[i * ldc + j]));
      else ASSERT_TRUE(std::isnan(c[i * ldc + j]));
}

TEST(Gemm, AllTransposesOddSizes) {
  const std::size_t sizes[] = {1, 2, 7, 31, 127, 129, 257};
  for (kernel_path path : paths())
    for (std::size_t s : sizes)
      for (matrix_op oa : {matrix_op::identity, matrix_op::transpose})
        for (matrix_op ob : {matrix_op::identity, matrix_op::transpose}) {
          run_gemm({s, s, s}, oa, ob, 1.0f, 0.0f, 0, path, 10);
          run_gemm({s, s + 3, s > 5 ? s - 5 : s}, oa, ob, -0.5f, 2.0f, 3, path, 20);
        }
}

TEST(Gemm, RectangularAndAlphaBetaEdges) {
  const gemm_case shapes[] = {{1, 300, 5}, {300, 1, 9}, {5, 7, 600}, {200, 33, 1}, {13, 700, 70}, {150, 150, 513}};
  for (kernel_path path : paths())
    for (gemm_case g : shapes)
      for (float alpha : {1.0f, -1.0f, 0.25f})
        for (float beta : {0.0f, 1.0f, -3.0f}) run_gemm(g, matrix_op::transpose, matrix_op::identity, alpha, beta, 1, path, 5);
}

TEST(Gemm, Size1000EveryTranspose) {
  // Under the sanitizers a smaller product that still crosses every block with a tail: m past mc
  // (144; scalar 128), n past a compute chunk (480; 512 on AVX-512), k past kc (256).
  const gemm_case g{lowbit_test::sanitized_size(1000, 301), lowbit_test::sanitized_size(1000, 533),
                    lowbit_test::sanitized_size(1000, 267)};
  const std::vector<float> a = uniform(g.m * g.k, 3), b = uniform(g.k * g.n, 4);
  std::vector<float> nan_c(g.m * g.n, std::numeric_limits<float>::quiet_NaN());
  std::vector<std::vector<float>> results;
  for (kernel_path path : paths())
    for (matrix_op oa : {matrix_op::identity, matrix_op::transpose})
      for (matrix_op ob : {matrix_op::identity, matrix_op::transpose}) {
        const stored sa = store(a, g.m, g.k, oa, 0), sb = store(b, g.k, g.n, ob, 0);
        std::vector<float> c = nan_c;
        lowbit::gemm_options o;
        o.op_a = oa;
        o.op_b = ob;
        scoped_path s(path);
        ASSERT_EQ(lowbit::gemm(sa.data.data(), sa.ld, sb.data.data(), sb.ld, g.m, g.n, g.k, o, c.data(), g.n), errc::ok);
        results.push_back(std::move(c));
      }
  // One float64 reference for all (costly at this size); each path's four results against it.
  const product64 ab = multiply64(a, b, g);
  for (const std::vector<float>& c : results) expect_gemm_close(ab, nan_c, c, g.n, g, 1.0f, 0.0f);
}

TEST(Gemm, AlphaZeroAndDepthZeroScaleC) {
  for (kernel_path path : paths()) {
    scoped_path s(path);
    std::vector<float> c = uniform(12, 1), want = c;
    for (float& x : want) x *= 2.0f;
    lowbit::gemm_options o;
    o.beta = 2.0f;
    EXPECT_EQ(lowbit::gemm(nullptr, 0, nullptr, 4, 3, 4, 0, o, c.data(), 4), errc::ok);  // k = 0, A and B null
    EXPECT_TRUE(same_bits(c, want));
    std::vector<float> a(6, std::numeric_limits<float>::quiet_NaN()), b(8, 1.0f);
    o.alpha = 0.0f;
    o.beta = 0.0f;
    std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(lowbit::gemm(a.data(), 2, b.data(), 4, 3, 4, 2, o, c.data(), 4), errc::ok);  // alpha = 0: A not read
    for (float x : c) EXPECT_EQ(x, 0.0f);
  }
}

TEST(Gemm, DeterministicAcrossRunsAndThreads) {
  const std::size_t m = 301, n = 517, k = 611;  // several blocks of rows, columns and depth
  const std::vector<float> a = uniform(m * k, 7), b = uniform(n * k, 8);
  lowbit::std_thread_exec two(2);
  lowbit::gemm_options o;
  o.op_b = matrix_op::transpose;
  for (kernel_path path : paths()) {
    scoped_path s(path);
    std::vector<float> c1(m * n), c2(m * n), c3(m * n);
    ASSERT_EQ(lowbit::gemm(a.data(), k, b.data(), k, m, n, k, o, c1.data(), n), errc::ok);
    ASSERT_EQ(lowbit::gemm(a.data(), k, b.data(), k, m, n, k, o, c2.data(), n), errc::ok);
    ASSERT_EQ(lowbit::gemm(a.data(), k, b.data(), k, m, n, k, o, c3.data(), n, two.exec()), errc::ok);
    EXPECT_TRUE(same_bits(c1, c2)) << path.name;
    EXPECT_TRUE(same_bits(c1, c3)) << path.name;
  }
}

TEST(Gemm, ArgumentChecks) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f), c(64, 0.0f);
  const std::vector<float> c_before = c;
  lowbit::gemm_options o;
  auto call = [&](const float* pa, std::size_t lda, const float* pb, std::size_t ldb, std::size_t m, std::size_t n,
                  std::size_t k, float* pc, std::size_t ldc) { return lowbit::gemm(pa, lda, pb, ldb, m, n, k, o, pc, ldc); };
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::ok);
  std::fill(c.begin(), c.end(), 0.0f);
  // options
  o.op_a = static_cast<matrix_op>(7);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  o = {};
  o.alpha = std::numeric_limits<float>::infinity();
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  o = {};
  o.beta = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  o = {};
  // shape: leading dimension below the row, spans that overflow
  EXPECT_EQ(call(a.data(), 3, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(call(a.data(), 4, b.data(), 3, 4, 4, 4, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 3), errc::bad_argument);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_EQ(call(a.data(), huge, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(call(nullptr, 0, nullptr, 0, huge, 0, 0, nullptr, 0), errc::ok);  // empty C, spans 0
  EXPECT_EQ(call(nullptr, huge, nullptr, huge, huge, huge, 0, nullptr, huge), errc::bad_argument);
  // empty
  EXPECT_EQ(call(nullptr, 4, nullptr, 0, 0, 0, 4, nullptr, 0), errc::ok);
  EXPECT_EQ(call(nullptr, 4, nullptr, 0, 5, 0, 4, nullptr, 0), errc::ok);
  // buffers
  EXPECT_EQ(call(nullptr, 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, nullptr, 4), errc::bad_argument);
  lowbit_test::misaligned<float> odd(16);
  EXPECT_EQ(call(odd.data(), 4, b.data(), 4, 4, 4, 4, c.data(), 4), errc::misaligned);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, odd.data(), 4), errc::misaligned);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, a.data() + 15, 4), errc::overlapping_buffers);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, b.data(), 4), errc::overlapping_buffers);
  EXPECT_EQ(call(a.data(), 4, b.data(), 4, 4, 4, 4, a.data() + 16, 4), errc::ok);  // adjacent, disjoint
  EXPECT_TRUE(same_bits(std::vector<float>(c.begin(), c.end()), c_before));
}

// ---------------------------------------------------------------------------------------------
// syrk

// One syrk of tokens x n on the given path against float64: only the filled triangle written (the
// other, and with beta 0 everything, starts as NaN, which must never be read).
void check_syrk(const kernel_path& path, std::size_t n, std::size_t tokens, triangle fill, float beta) {
  SCOPED_TRACE(testing::Message() << path.name << " n " << n << " tokens " << tokens << " fill " << int(fill)
                                  << " beta " << beta);
  const std::size_t lda = n + 2, ldc = n + 1;
  const std::vector<float> x = uniform(tokens * lda, 11);
  std::vector<float> c0 = uniform(n * ldc, 12);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if ((fill == triangle::lower && j > i) || (fill != triangle::lower && j < i) || beta == 0.0f)
        c0[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> c = c0;
  lowbit::syrk_options o;
  o.alpha = 0.5f;
  o.beta = beta;
  o.fill = fill;
  scoped_path s(path);
  ASSERT_EQ(lowbit::syrk(x.data(), lda, tokens, n, o, c.data(), ldc), errc::ok);
  const double slices = std::ceil(static_cast<double>(tokens) / 128.0);
  const double factor = 1.01 * (static_cast<double>(tokens) + 2.0 * slices + 2.0) * u32;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const bool written = fill == triangle::both || (fill == triangle::upper ? j >= i : j <= i);
      const float got = c[i * ldc + j];
      if (!written) {
        if (!std::isnan(got) && bad++ < 3) ADD_FAILURE() << "written outside the triangle " << i << "," << j;
        continue;
      }
      if (fill == triangle::both && j < i && lowbit_test::float_bits(got) != lowbit_test::float_bits(c[j * ldc + i]))
        ++bad;
      double acc = 0, mag = 0;
      for (std::size_t t = 0; t < tokens; ++t) {
        const double p = static_cast<double>(x[t * lda + i]) * x[t * lda + j];
        acc += p;
        mag += std::fabs(p);
      }
      const std::size_t ui = std::min(i, j), uj = std::max(i, j);
      const std::size_t src = fill == triangle::lower ? std::max(i, j) * ldc + std::min(i, j) : ui * ldc + uj;
      const double cv = beta == 0.0f ? 0.0 : c0[src];
      const double want = 0.5 * acc + cv;
      if (!(std::fabs(got - want) <= factor * (0.5 * mag + std::fabs(cv)) + 1e-37) && bad++ < 3)
        ADD_FAILURE() << i << "," << j << ": " << got << " want " << want;
    }
  EXPECT_EQ(bad, 0u);
}

TEST(Syrk, EveryTriangleAgainstFloat64) {
  // (sanitized: 151 for 257, still past mc = 144 with a tail; 300 tokens cross kc = 256)
  const std::size_t sizes[] = {1, 2, 7, 31, 127, 129, lowbit_test::sanitized_size(257, 151)};
  for (kernel_path path : paths())
    for (std::size_t n : sizes)
      for (std::size_t tokens : {std::size_t{1}, n + 13, std::size_t{300}})
        for (triangle fill : {triangle::upper, triangle::lower, triangle::both})
          for (float beta : {0.0f, 1.0f}) check_syrk(path, n, tokens, fill, beta);
}

// 530 columns: past the multiply's compute chunk (480 columns on AVX2 and scalar, 512 for the
// AVX-512 kernel's 64-column slivers), so a triangle's tiles straddle a chunk boundary.
TEST(Syrk, CrossesTheComputeChunk) {
  for (kernel_path path : paths())
    for (triangle fill : {triangle::upper, triangle::lower, triangle::both}) check_syrk(path, 530, 20, fill, 1.0f);
}

TEST(Syrk, DeterministicWithThreadsAndChecks) {
  const std::size_t tokens = 700, n = 300;
  const std::vector<float> x = uniform(tokens * n, 13);
  lowbit::std_thread_exec two(2);
  for (kernel_path path : paths()) {
    scoped_path s(path);
    std::vector<float> c1(n * n, 0.0f), c2(n * n, 0.0f);
    ASSERT_EQ(lowbit::syrk(x.data(), n, tokens, n, {}, c1.data(), n), errc::ok);
    ASSERT_EQ(lowbit::syrk(x.data(), n, tokens, n, {}, c2.data(), n, two.exec()), errc::ok);
    EXPECT_TRUE(same_bits(c1, c2));
  }
  std::vector<float> c(16, 0.0f);
  lowbit::syrk_options o;
  o.fill = static_cast<triangle>(9);
  EXPECT_EQ(lowbit::syrk(x.data(), 4, 4, 4, o, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(lowbit::syrk(x.data(), 3, 4, 4, {}, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(lowbit::syrk(nullptr, 4, 0, 0, {}, nullptr, 0), errc::ok);
  EXPECT_EQ(lowbit::syrk(nullptr, 4, 4, 4, {}, c.data(), 4), errc::bad_argument);
  EXPECT_EQ(lowbit::syrk(x.data(), 4, 4, 4, {}, const_cast<float*>(x.data()) + 3, 4), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::syrk(nullptr, 4, 0, 4, {}, c.data(), 4), errc::ok);  // no tokens: C = beta C
}

// ---------------------------------------------------------------------------------------------
// Cholesky, inverse, triangular solves

// A symmetric positive definite n x n matrix (ld = n + pad): X^T X / t + d I, its condition number
// below about 10 for d = 1 (well conditioned, for the inverse) or larger for d small.
std::vector<float> spd(std::size_t n, std::size_t pad, double d, unsigned seed) {
  const std::size_t t = n + 20;
  const std::vector<float> x = uniform(t * n, seed);
  const std::size_t ld = n + pad;
  std::vector<float> a(n * ld, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i; j < n; ++j) {
      double s = 0;
      for (std::size_t q = 0; q < t; ++q) s += static_cast<double>(x[q * n + i]) * x[q * n + j];
      s = s / static_cast<double>(t) * 3.0 + (i == j ? d : 0.0);
      a[i * ld + j] = a[j * ld + i] = static_cast<float>(s);
    }
  return a;
}

// Element (i, j) of the factor as a full upper U (zero below), whichever triangle holds it.
double factor_u(const std::vector<float>& a, std::size_t ld, triangle uplo, std::size_t i, std::size_t j) {
  if (j < i) return 0.0;
  return uplo == triangle::upper ? a[i * ld + j] : a[j * ld + i];
}

TEST(Cholesky, BackwardErrorBothTriangles) {
  const std::size_t sizes[] = {1, 2, 7, 31, 127, 129, 257};
  for (kernel_path path : paths())
    for (std::size_t n : sizes)
      for (triangle uplo : {triangle::upper, triangle::lower}) {
        SCOPED_TRACE(testing::Message() << path.name << " n " << n << " uplo " << int(uplo));
        const std::size_t ld = n + 3;
        std::vector<float> a = spd(n, 3, 0.01, 21);
        // the other triangle holds sentinels that must survive
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < n; ++j)
            if (uplo == triangle::upper ? j < i : j > i) a[i * ld + j] = -7.0f;
        const std::vector<float> a0 = a;
        lowbit::cholesky_options o;
        o.uplo = uplo;
        scoped_path s(path);
        ASSERT_EQ(lowbit::cholesky(n, o, a.data(), ld), errc::ok);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            if (uplo == triangle::upper ? j < i : j > i) {
              if (a[i * ld + j] != -7.0f) ++bad;
              continue;
            }
            const std::size_t ui = std::min(i, j), uj = std::max(i, j);
            double prod = 0, mag = 0;
            for (std::size_t q = 0; q <= ui; ++q) {
              const double p = factor_u(a, ld, uplo, q, ui) * factor_u(a, ld, uplo, q, uj);
              prod += p;
              mag += std::fabs(p);
            }
            const double want = a0[i * ld + j];
            if (!(std::fabs(prod - want) <= 2.0 * static_cast<double>(n + 2) * u32 * mag) && bad++ < 3)
              ADD_FAILURE() << i << "," << j << ": U^T U = " << prod << ", A = " << want;
          }
        EXPECT_EQ(bad, 0u);
        for (std::size_t i = 0; i < n * ld; i += ld + 1) EXPECT_GT(a[i], 0.0f);
      }
}

TEST(Cholesky, NotPositiveDefinite) {
  for (kernel_path path : paths())
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{257}}) {
      scoped_path s(path);
      std::vector<float> a = spd(n, 0, 0.5, 31);
      // subtract 2x the largest eigenvalue bound from one diagonal element near the end:
      // a pivot there becomes negative
      a[(n - 1) * n + (n - 1)] = -1.0f;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j) a[i * n + j] = 5.0f;  // lower sentinels
      const std::vector<float> a0 = a;
      EXPECT_EQ(lowbit::cholesky(n, {}, a.data(), n), errc::not_positive_definite);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j) ASSERT_EQ(a[i * n + j], 5.0f);
      // zero matrix and an indefinite 2 x 2
      std::vector<float> z(4, 0.0f);
      EXPECT_EQ(lowbit::cholesky(2, {}, z.data(), 2), errc::not_positive_definite);
      std::vector<float> ind{1.0f, 2.0f, 2.0f, 1.0f};
      EXPECT_EQ(lowbit::cholesky(2, {}, ind.data(), 2), errc::not_positive_definite);
    }
}

TEST(Cholesky, ChecksWriteNothing) {
  std::vector<float> a = spd(5, 0, 1.0, 41);
  a[2 * 5 + 3] = std::numeric_limits<float>::infinity();  // in the upper triangle
  std::vector<float> a0 = a;
  EXPECT_EQ(lowbit::cholesky(5, {}, a.data(), 5), errc::non_finite_input);
  EXPECT_TRUE(same_bits(a, a0));
  lowbit::cholesky_options lower;
  lower.uplo = triangle::lower;
  a[3 * 5 + 2] = 0.5f;  // the lower triangle is finite: lower factorisation does not see the Inf
  EXPECT_EQ(lowbit::cholesky(5, lower, a.data(), 5), errc::ok);
  lowbit::cholesky_options both;
  both.uplo = triangle::both;
  EXPECT_EQ(lowbit::cholesky(5, both, a0.data(), 5), errc::bad_argument);
  EXPECT_EQ(lowbit::cholesky(5, {}, a0.data(), 4), errc::bad_argument);
  EXPECT_EQ(lowbit::cholesky(0, {}, nullptr, 0), errc::ok);
  EXPECT_EQ(lowbit::cholesky(5, {}, nullptr, 5), errc::bad_argument);
  lowbit_test::misaligned<float> odd(25);
  EXPECT_EQ(lowbit::cholesky(5, {}, odd.data(), 5), errc::misaligned);
  EXPECT_TRUE(same_bits(a0, a0));
}

TEST(Cholesky, DeterministicWithThreads) {
  const std::size_t n = 600;
  const std::vector<float> a = spd(n, 0, 0.01, 51);
  lowbit::std_thread_exec two(2);
  for (kernel_path path : paths()) {
    scoped_path s(path);
    std::vector<float> a1 = a, a2 = a, a3 = a;
    ASSERT_EQ(lowbit::cholesky(n, {}, a1.data(), n), errc::ok);
    ASSERT_EQ(lowbit::cholesky(n, {}, a2.data(), n), errc::ok);
    ASSERT_EQ(lowbit::cholesky(n, {}, a3.data(), n, two.exec()), errc::ok);
    EXPECT_TRUE(same_bits(a1, a2));
    EXPECT_TRUE(same_bits(a1, a3));
  }
}

// The inverse of A in float64 (Gauss-Jordan with partial pivoting; A is well conditioned).
std::vector<double> inverse64(const std::vector<float>& a, std::size_t n, std::size_t ld) {
  std::vector<double> m(n * 2 * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) m[i * 2 * n + j] = a[i * ld + j];
    m[i * 2 * n + n + i] = 1.0;
  }
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(m[r * 2 * n + c]) > std::fabs(m[piv * 2 * n + c])) piv = r;
    for (std::size_t j = 0; j < 2 * n; ++j) std::swap(m[c * 2 * n + j], m[piv * 2 * n + j]);
    const double d = m[c * 2 * n + c];
    for (std::size_t j = 0; j < 2 * n; ++j) m[c * 2 * n + j] /= d;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r * 2 * n + c];
      if (f == 0.0) continue;
      for (std::size_t j = c; j < 2 * n; ++j) m[r * 2 * n + j] -= f * m[c * 2 * n + j];
    }
  }
  std::vector<double> inv(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) inv[i * n + j] = m[i * 2 * n + n + j];
  return inv;
}

TEST(CholeskyInverse, AgainstFloat64) {
  const std::size_t sizes[] = {1, 2, 7, 31, 127, 129, 257};
  for (std::size_t n : sizes) {
    const std::size_t ld = n + 2;
    const std::vector<float> a = spd(n, 2, 1.0, 61);
    const std::vector<double> want = inverse64(a, n, ld);
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (kernel_path path : paths())
      for (triangle factor : {triangle::upper, triangle::lower})
        for (triangle fill : {triangle::upper, triangle::lower, triangle::both}) {
          SCOPED_TRACE(testing::Message() << path.name << " n " << n << " factor " << int(factor)
                                          << " fill " << int(fill));
          scoped_path s(path);
          std::vector<float> f = a;
          lowbit::cholesky_options co;
          co.uplo = factor;
          ASSERT_EQ(lowbit::cholesky(n, co, f.data(), ld), errc::ok);
          const std::size_t ldi = n + 1;
          std::vector<float> inv(n * ldi, std::numeric_limits<float>::quiet_NaN());
          lowbit::cholesky_inverse_options io;
          io.factor = factor;
          io.fill = fill;
          ASSERT_EQ(lowbit::cholesky_inverse(f.data(), ld, n, io, inv.data(), ldi), errc::ok);
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) {
              const bool written = fill == triangle::both || (fill == triangle::upper ? j >= i : j <= i);
              const float got = inv[i * ldi + j];
              if (!written) {
                if (!std::isnan(got)) ++bad;
                continue;
              }
              if (!(std::fabs(got - want[i * n + j]) <= 40.0 * static_cast<double>(n + 2) * u32 * scale) && bad++ < 3)
                ADD_FAILURE() << i << "," << j << ": " << got << " want " << want[i * n + j];
            }
          EXPECT_EQ(bad, 0u);
        }
  }
}

TEST(CholeskyInverse, Checks) {
  std::vector<float> u{2.0f, 1.0f, 0.0f, 3.0f}, inv(4, 0.0f);
  lowbit::cholesky_inverse_options o;
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 2, 2, o, inv.data(), 2), errc::ok);
  // A = U^T U = [[4, 2], [2, 10]], A^-1 = [[10, -2], [-2, 4]] / 36
  EXPECT_NEAR(inv[0], 10.0 / 36, 1e-7);
  EXPECT_NEAR(inv[1], -2.0 / 36, 1e-7);
  EXPECT_NEAR(inv[3], 4.0 / 36, 1e-7);
  EXPECT_EQ(inv[2], 0.0f);  // fill upper: the lower triangle is untouched
  o.factor = triangle::both;
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 2, 2, o, inv.data(), 2), errc::bad_argument);
  o = {};
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 2, 2, o, u.data() + 1, 2), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 1, 2, o, inv.data(), 2), errc::bad_argument);
  EXPECT_EQ(lowbit::cholesky_inverse(nullptr, 0, 0, o, nullptr, 0), errc::ok);
  std::fill(inv.begin(), inv.end(), 9.0f);
  u[3] = 0.0f;
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 2, 2, o, inv.data(), 2), errc::bad_argument);
  u[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::cholesky_inverse(u.data(), 2, 2, o, inv.data(), 2), errc::non_finite_input);
  for (float x : inv) EXPECT_EQ(x, 9.0f);
}

TEST(TriangularSolve, EverySideTriangleAndTranspose) {
  const std::size_t sizes[] = {1, 2, 7, 31, 127, 129, 257};
  for (kernel_path path : paths())
    for (std::size_t n : sizes)
      for (lowbit::solve_side side : {lowbit::solve_side::left, lowbit::solve_side::right})
        for (triangle uplo : {triangle::upper, triangle::lower})
          for (matrix_op op : {matrix_op::identity, matrix_op::transpose}) {
            const std::size_t other = n % 3 == 0 ? 5 : n + 9;  // the other dimension of B
            const bool left = side == lowbit::solve_side::left;
            const std::size_t rows = left ? n : other, cols = left ? other : n;
            SCOPED_TRACE(testing::Message() << path.name << " n " << n << " left " << left << " uplo "
                                            << int(uplo) << " op " << int(op));
            const std::size_t ldt = n + 1, ldb = cols + 2;
            std::vector<float> t = uniform(n * ldt, 71, -0.5f, 0.5f);
            for (std::size_t i = 0; i < n; ++i) {
              t[i * ldt + i] = (i % 2 ? -1.0f : 1.0f) * (1.0f + static_cast<float>(i % 5));
              for (std::size_t j = 0; j < n; ++j)
                if (uplo == triangle::upper ? j < i : j > i) t[i * ldt + j] = std::numeric_limits<float>::quiet_NaN();
            }
            const std::vector<float> b0 = uniform(rows * ldb, 72);
            std::vector<float> x = b0;
            lowbit::triangular_solve_options o;
            o.side = side;
            o.uplo = uplo;
            o.op = op;
            scoped_path s(path);
            ASSERT_EQ(lowbit::triangular_solve(t.data(), ldt, rows, cols, o, x.data(), ldb), errc::ok);
            // op(T)(i, j) as a full matrix with zeros outside the triangle
            auto opt = [&](std::size_t i, std::size_t j) -> double {
              const std::size_t si = op == matrix_op::transpose ? j : i, sj = op == matrix_op::transpose ? i : j;
              if (uplo == triangle::upper ? sj < si : sj > si) return 0.0;
              return t[si * ldt + sj];
            };
            std::size_t bad = 0;
            // the residual of every row (under the sanitizers every 8th: the solve itself runs whole)
            for (std::size_t i = 0; i < rows; i += lowbit_test::sanitized_size(1, 8))
              for (std::size_t j = 0; j < cols; ++j) {
                double r = 0, mag = 0;
                for (std::size_t q = 0; q < n; ++q) {
                  const double p = left ? opt(i, q) * x[q * ldb + j] : static_cast<double>(x[i * ldb + q]) * opt(q, j);
                  r += p;
                  mag += std::fabs(p);
                }
                const double want = b0[i * ldb + j];
                if (!(std::fabs(r - want) <= 2.0 * static_cast<double>(n + 2) * u32 * mag + 1e-30) && bad++ < 3)
                  ADD_FAILURE() << i << "," << j << ": residual " << r - want << " bound " << 2.0 * (n + 2) * u32 * mag;
              }
            EXPECT_EQ(bad, 0u);
            for (std::size_t i = 0; i < rows; ++i)  // B's padding untouched
              for (std::size_t j = cols; j < ldb; ++j) ASSERT_EQ(x[i * ldb + j], b0[i * ldb + j]);
          }
}

TEST(TriangularSolve, ChecksAndDeterminism) {
  std::vector<float> t{2.0f, 1.0f, 0.0f, 4.0f}, b{1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> b0 = b;
  lowbit::triangular_solve_options o;
  t[3] = 0.0f;
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 2), errc::bad_argument);
  t[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 2), errc::non_finite_input);
  EXPECT_TRUE(same_bits(b, b0));
  t[3] = 4.0f;
  o.uplo = triangle::both;
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 2), errc::bad_argument);
  o = {};
  o.side = static_cast<lowbit::solve_side>(2);
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 2), errc::bad_argument);
  o = {};
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, t.data() + 2, 2), errc::overlapping_buffers);
  EXPECT_EQ(lowbit::triangular_solve(nullptr, 0, 0, 3, o, nullptr, 3), errc::ok);
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 1), errc::bad_argument);
  EXPECT_EQ(lowbit::triangular_solve(t.data(), 2, 2, 2, o, b.data(), 2), errc::ok);
  // [[2, 1], [0, 4]] X = [[1, 2], [3, 4]]: X = [[1/8, 1/2], [3/4, 1]]
  EXPECT_EQ(b[0], 0.125f);
  EXPECT_EQ(b[1], 0.5f);
  EXPECT_EQ(b[2], 0.75f);
  EXPECT_EQ(b[3], 1.0f);

  const std::size_t n = 400, nrhs = 300;
  std::vector<float> big = uniform(n * n, 81, -0.1f, 0.1f);
  for (std::size_t i = 0; i < n; ++i) big[i * n + i] = 2.0f;
  const std::vector<float> rhs = uniform(n * nrhs, 82);
  lowbit::std_thread_exec two(2);
  for (kernel_path path : paths())
    for (lowbit::solve_side side : {lowbit::solve_side::left, lowbit::solve_side::right}) {
      scoped_path s(path);
      o.side = side;
      const std::size_t rows = side == lowbit::solve_side::left ? n : nrhs;
      const std::size_t cols = side == lowbit::solve_side::left ? nrhs : n;
      std::vector<float> x1 = rhs, x2 = rhs;
      ASSERT_EQ(lowbit::triangular_solve(big.data(), n, rows, cols, o, x1.data(), cols), errc::ok);
      ASSERT_EQ(lowbit::triangular_solve(big.data(), n, rows, cols, o, x2.data(), cols, two.exec()), errc::ok);
      EXPECT_TRUE(same_bits(x1, x2));
    }
}

// T^-1 in place against a float64 inverse by substitution: the residual T X - I, relative to the
// size of T and X, near float32 rounding, the other triangle untouched, the same bits on a rerun
// and with two threads.
TEST(TriangularInverse, AgainstFloat64BothTriangles) {
  // (sanitized: 400 for 1000, still above 300: the sampled rows, the widest path only)
  const std::size_t sizes[] = {1, 7, 64, 65, 127, 129, 300, lowbit_test::sanitized_size(1000, 400)};
  lowbit::std_thread_exec pool(2);
  for (kernel_path path : paths()) {
    const scoped_path scope(path);
    for (std::size_t n : sizes)
      for (triangle uplo : {triangle::upper, triangle::lower}) {
        if (n > 300 && path.name != paths().back().name) continue;  // the widest path only (float64 n^3)
        SCOPED_TRACE(testing::Message() << path.name << " n " << n << " uplo " << int(uplo));
        const std::size_t ld = n + 3;
        std::vector<float> t = uniform(n * ld, 91, -0.5f, 0.5f);
        const bool upper = uplo == triangle::upper;
        // off-diagonal entries of size 1 / n: a well-conditioned T whose inverse stays of size 1
        for (float& v : t) v *= 2.0f / static_cast<float>(n);
        for (std::size_t i = 0; i < n; ++i) t[i * ld + i] = (i % 2 == 0 ? 1.0f : -1.0f) * (1.0f + std::fabs(t[i * ld + i]));
        const auto in = [&](std::size_t i, std::size_t j) { return upper ? j >= i : j <= i; };
        const auto tf = [&](std::size_t i, std::size_t j) { return in(i, j) ? static_cast<double>(t[i * ld + j]) : 0.0; };
        std::vector<float> x = t;
        ASSERT_TRUE(lowbit::triangular_inverse(n, {uplo}, x.data(), ld).ok());
        std::vector<float> x2 = t;
        ASSERT_TRUE(lowbit::triangular_inverse(n, {uplo}, x2.data(), ld, pool.exec()).ok());
        EXPECT_TRUE(same_bits(x, x2));
        // float64 inverse, column by column by substitution
        std::vector<double> inv(n * n, 0.0);
        for (std::size_t c = 0; c < n; ++c)
          for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = upper ? n - 1 - k : k;
            double acc = i == c ? 1.0 : 0.0;
            if (upper) {
              for (std::size_t q = i + 1; q < n; ++q) acc -= tf(i, q) * inv[q * n + c];
            } else {
              for (std::size_t q = 0; q < i; ++q) acc -= tf(i, q) * inv[q * n + c];
            }
            inv[i * n + c] = acc / tf(i, i);
          }
        double worst = 0.0;
        const std::size_t step = n > 300 ? 37 : 1;  // rows sampled at the largest n
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            if (i % step != 0 && in(i, j)) continue;
            if (!in(i, j)) {
              ASSERT_EQ(x[i * ld + j], t[i * ld + j]);  // the other triangle: untouched
              continue;
            }
            double scale = 0.0, r = i == j ? -1.0 : 0.0;  // (T X - I)(i, j) over sum |T(i, q)| |X(q, j)|
            for (std::size_t q = 0; q < n; ++q)
              if (in(i, q) && in(q, j)) {
                scale += std::fabs(tf(i, q)) * std::fabs(inv[q * n + j]);
                r += tf(i, q) * static_cast<double>(x[q * ld + j]);
              }
            worst = std::max(worst, std::fabs(r) / scale);
            EXPECT_NEAR(x[i * ld + j], inv[i * n + j], 1e-4);
          }
        EXPECT_LT(worst, 4.0 * static_cast<double>(n + 8) * u32);
      }
  }
}

TEST(TriangularInverse, Checks) {
  std::vector<float> t{2.0f, 1.0f, 7.0f, 4.0f};  // 2 x 2
  const std::vector<float> keep = t;
  EXPECT_EQ(lowbit::triangular_inverse(2, {triangle::both}, t.data(), 2).code(), errc::bad_argument);
  EXPECT_EQ(lowbit::triangular_inverse(2, {triangle::upper}, t.data(), 1).code(), errc::bad_argument);
  EXPECT_TRUE(lowbit::triangular_inverse(0, {triangle::upper}, nullptr, 2).ok());
  EXPECT_EQ(lowbit::triangular_inverse(2, {triangle::upper}, nullptr, 2).code(), errc::bad_argument);
  t[3] = 0.0f;
  EXPECT_EQ(lowbit::triangular_inverse(2, {triangle::upper}, t.data(), 2).code(), errc::bad_argument);
  t[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(lowbit::triangular_inverse(2, {triangle::lower}, t.data(), 2).code(), errc::non_finite_input);
  t[3] = 4.0f;
  EXPECT_TRUE(same_bits(t, keep));
  ASSERT_TRUE(lowbit::triangular_inverse(2, {triangle::upper}, t.data(), 2).ok());
  EXPECT_EQ(t[0], 0.5f);
  EXPECT_EQ(t[3], 0.25f);
  EXPECT_EQ(t[1], -0.125f);  // -(1/2) * 1 * (1/4)
  EXPECT_EQ(t[2], 7.0f);     // lower triangle untouched
}

TEST(Linalg, CallerFloatingPointEnvironmentDoesNotMatter) {
  const std::size_t n = 70;
  const std::vector<float> a = spd(n, 0, 0.01, 91);
  for (kernel_path path : paths()) {
    scoped_path s(path);
    std::vector<float> ref = a;
    ASSERT_EQ(lowbit::cholesky(n, {}, ref.data(), n), errc::ok);
    for (const lowbit_test::mxcsr_state& st : lowbit_test::mxcsr_states) {
      std::vector<float> f = a;
      {
        lowbit_test::mxcsr_scope env(st.bits);
        ASSERT_EQ(lowbit::cholesky(n, {}, f.data(), n), errc::ok);
      }
      EXPECT_TRUE(same_bits(f, ref)) << st.name;
    }
  }
}

}  // namespace
