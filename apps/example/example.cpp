// A program that links libengine: builds two small relations in memory, joins them and prints the
// result. Build: part of the mgjoin CMake project (target mgjoin_example); in your own project, after
// `cmake --install build --prefix P`: find_package(mgjoin CONFIG) (with P on CMAKE_PREFIX_PATH) and
// target_link_libraries(app PRIVATE mgjoin::engine) — tests/install/consumer/ does exactly that.
#include <mgjoin/join.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  // R(key, payload) and S(key, payload); key 2 occurs twice in R, so it matches twice.
  std::vector<std::int64_t> r_key{5, 2, 1, 2}, s_key{7, 2, 5};
  std::vector<std::int64_t> r_val{50, 20, 10, 21}, s_val{700, 200, 500};

  using mgjoin::DType;
  mgjoin::RelationView r{{r_key.data(), 4, DType::Int64}, mgjoin::MutableColumnView{r_val.data(), 4, DType::Int64}};
  mgjoin::RelationView s{{s_key.data(), 3, DType::Int64}, mgjoin::MutableColumnView{s_val.data(), 3, DType::Int64}};

  mgjoin::JoinOptions options;  // all GPUs when present, else the CPU path
  options.output = mgjoin::OutputMode::Materialize;
  const mgjoin::JoinResult result = mgjoin::join(r, s, options);

  std::printf("%llu matches on %s\n", static_cast<unsigned long long>(result.count), result.executor.c_str());
  const auto* key = result.key.as<std::int64_t>();
  const auto* rv = result.r_payload.as<std::int64_t>();
  const auto* sv = result.s_payload.as<std::int64_t>();
  for (std::uint64_t i = 0; i < result.count; ++i)
    std::printf("key %lld  r %lld  s %lld\n", static_cast<long long>(key[i]), static_cast<long long>(rv[i]),
                static_cast<long long>(sv[i]));
  return result.count == 3 ? 0 : 1;
}
