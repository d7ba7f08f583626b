#pragma once
// Errors carry their place: every check throws with file and line, CUDA failures name the call and keep
// its cudaError_t. The ground layer (core/): every module may include it, it includes nothing of ours.
// NCCL's checks live next to the NCCL code (p2p/nccl_error.hpp), so users of libengine need no NCCL.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace mgjoin {

/// Base of every error mgjoin throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input (files, options, relation shapes): the message is one line meant for the user.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A CUDA runtime or NCCL call failed. code() is the CUDA error (cudaErrorUnknown for NCCL failures).
class CudaError : public Error {
 public:
  explicit CudaError(const std::string& what, cudaError_t code = cudaErrorUnknown) : Error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// A stack allocator ran out of space (see alloc/stack_allocator.hpp), or host memory cannot hold what a
/// join or column needs (checked before the memory is taken).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

/// The join was stopped through JoinOptions::cancel. Everything it took is freed, nothing is output.
class Cancelled : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line); }

[[noreturn]] inline void throw_cuda_error(int code, const char* call, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  throw CudaError("CUDA error " + std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
                      ") in " + call + " at " + where(file, line),
                  err);
}

[[noreturn]] inline void throw_logic_error(const char* cond, const std::string& msg, const char* file,
                                           int line) {
  throw Error(msg + " [" + cond + " failed at " + where(file, line) + "]");
}
}  // namespace detail

}  // namespace mgjoin

/// Internal invariant: throws mgjoin::Error with file and line when `cond` is false.
#define MGJOIN_EXPECTS(cond, msg)                                                     \
  do {                                                                                \
    if (!(cond)) ::mgjoin::detail::throw_logic_error(#cond, (msg), __FILE__, __LINE__); \
  } while (0)

/// User-facing check: throws mgjoin::InputError with exactly `msg` (one line, names file/option).
#define MGJOIN_INPUT_EXPECTS(cond, msg)             \
  do {                                              \
    if (!(cond)) throw ::mgjoin::InputError((msg)); \
  } while (0)

/// Checks a CUDA runtime call; throws mgjoin::CudaError naming the call, file and line.
#define MGJOIN_CUDA_TRY(call)                                                                  \
  do {                                                                                         \
    const auto mgjoin_cuda_status_ = (call);                                                   \
    if (mgjoin_cuda_status_ != 0)                                                              \
      ::mgjoin::detail::throw_cuda_error(static_cast<int>(mgjoin_cuda_status_), #call, __FILE__, __LINE__); \
  } while (0)

/// Checks the last kernel launch (configuration errors) without synchronizing.
#define MGJOIN_CHECK_LAUNCH() MGJOIN_CUDA_TRY(cudaGetLastError())
