#pragma once
// Errors carry their place: every check throws with file and line, CUDA and NCCL failures name the call.
#include <cuda_runtime_api.h>
#include <nccl.h>

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

/// A CUDA runtime or NCCL call failed.
class CudaError : public Error {
 public:
  using Error::Error;
};

/// A stack allocator ran out of space (see alloc/stack_allocator.hpp).
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line); }

[[noreturn]] inline void throw_cuda_error(int code, const char* call, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  throw CudaError("CUDA error " + std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
                  ") in " + call + " at " + where(file, line));
}

[[noreturn]] inline void throw_nccl_error(int code, const char* call, const char* file, int line) {
  throw CudaError("NCCL error " + std::to_string(code) + " (" +
                  ncclGetErrorString(static_cast<ncclResult_t>(code)) + ") in " + call + " at " +
                  where(file, line));
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

/// Checks an NCCL call; throws mgjoin::CudaError naming the call, file and line.
#define MGJOIN_NCCL_TRY(call)                                                                  \
  do {                                                                                         \
    const auto mgjoin_nccl_status_ = (call);                                                   \
    if (mgjoin_nccl_status_ != 0)                                                              \
      ::mgjoin::detail::throw_nccl_error(static_cast<int>(mgjoin_nccl_status_), #call, __FILE__, __LINE__); \
  } while (0)
