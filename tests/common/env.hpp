#pragma once
// An environment variable set (or unset, for nullptr) for a scope and restored at its end: the engine's
// knobs (MGJOIN_*) are read where a join starts, so a test sets them around its joins.
#include <cstdlib>
#include <string>

namespace mgjoin::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_.empty() ? unsetenv(name_) : setenv(name_, old_.c_str(), 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

}  // namespace mgjoin::test
