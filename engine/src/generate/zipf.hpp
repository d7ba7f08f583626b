#pragma once
// Zipf-distributed ranks by Gray et al.'s fast generator (SIGMOD '94, "Quickly Generating
// Billion-Record Synthetic Databases", Section 4): O(1) per draw after computing zeta(n, theta).
#include <cstdint>

namespace mgjoin::detail {

class ZipfGenerator {
 public:
  /// Ranks in [0, n) with P(rank k) proportional to 1 / (k + 1)^theta; theta in [0, 1].
  ZipfGenerator(std::uint64_t n, double theta);

  /// Maps a uniform u in [0, 1) to a rank (0 = the most frequent).
  std::uint64_t operator()(double u) const;

  /// sum_{i=1..n} 1 / i^theta: exact up to 2^20 terms, Euler-Maclaurin for the tail beyond.
  static double zeta(std::uint64_t n, double theta);

 private:
  std::uint64_t n_;
  double zeta_n_, second_rank_bound_;
  // Gray's eta and 1 / (1 - theta), rewritten with expm1/log1p so that theta -> 1 stays exact:
  // pow(eta*u - eta + 1, alpha) = exp(log1p(-eta * (1 - u)) * alpha).
  double eta_, alpha_;
  double eta_over_epsilon_;  // the theta = 1 limit: eta / (1 - theta)
};

}  // namespace mgjoin::detail
