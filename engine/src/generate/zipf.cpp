#include "engine/src/generate/zipf.hpp"

#include <algorithm>
#include <cmath>

namespace mgjoin::detail {
namespace {

constexpr std::uint64_t kExactZetaTerms = std::uint64_t{1} << 20;

/// Integral of x^-theta from a to b.
double power_integral(double a, double b, double theta) {
  const double epsilon = 1 - theta;
  if (epsilon == 0) return std::log(b / a);
  return std::pow(a, epsilon) * std::expm1(epsilon * std::log(b / a)) / epsilon;
}

}  // namespace

double ZipfGenerator::zeta(std::uint64_t n, double theta) {
  const std::uint64_t m = std::min(n, kExactZetaTerms);
  double sum = 0;
  for (std::uint64_t i = m; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);  // small terms first
  if (n == m) return sum;
  // Euler-Maclaurin: sum_{m+1..n} f = integral_m^n f + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12 + O(f'''(m)),
  // with f'''(m) ~ m^-4: far below double precision at m = 2^20.
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  const auto f = [&](double x) { return std::pow(x, -theta); };
  const auto df = [&](double x) { return -theta * std::pow(x, -theta - 1); };
  return sum + power_integral(dm, dn, theta) + (f(dn) - f(dm)) / 2 + (df(dn) - df(dm)) / 12;
}

ZipfGenerator::ZipfGenerator(std::uint64_t n, double theta) : n_(n) {
  zeta_n_ = n > 0 ? zeta(n, theta) : 0;
  second_rank_bound_ = 1 + std::pow(0.5, theta);
  const double epsilon = 1 - theta;
  const double zeta_2 = second_rank_bound_;
  eta_ = eta_over_epsilon_ = alpha_ = 0;
  if (n > 2) {
    const double log_2_over_n = std::log(2.0 / static_cast<double>(n));
    const double denominator = 1 - zeta_2 / zeta_n_;
    eta_ = -std::expm1(epsilon * log_2_over_n) / denominator;
    eta_over_epsilon_ = -log_2_over_n / denominator;
    alpha_ = epsilon > 0 ? 1 / epsilon : 0;
  }
}

std::uint64_t ZipfGenerator::operator()(double u) const {
  const double uz = u * zeta_n_;
  if (uz < 1 || n_ == 1) return 0;
  if (uz < second_rank_bound_ || n_ == 2) return 1;
  const double log_base = alpha_ > 0 ? std::log1p(-eta_ * (1 - u)) * alpha_ : -eta_over_epsilon_ * (1 - u);
  const auto rank = static_cast<std::uint64_t>(static_cast<double>(n_) * std::exp(log_base));
  return std::min(rank, n_ - 1);
}

}  // namespace mgjoin::detail
