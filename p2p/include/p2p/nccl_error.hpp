#pragma once
// NCCL's checks, beside the NCCL code: the public error header stays free of <nccl.h>.
#include "p2p/nccl_api.hpp"

#include <mgjoin/error.hpp>

#include <string>

namespace mgjoin::detail {

[[noreturn]] inline void throw_nccl_error(int code, const char* call, const char* file, int line) {
  const char* text = ::mgjoin::p2p::nccl().get_error_string(static_cast<ncclResult_t>(code));
  throw CudaError("NCCL error " + std::to_string(code) + " (" + text + ") in " + call + " at " + where(file, line));
}

}  // namespace mgjoin::detail

/// Checks an NCCL call; throws mgjoin::CudaError naming the call, file and line.
#define MGJOIN_NCCL_TRY(call)                                                                              \
  do {                                                                                                     \
    const auto mgjoin_nccl_status_ = (call);                                                               \
    if (mgjoin_nccl_status_ != 0)                                                                          \
      ::mgjoin::detail::throw_nccl_error(static_cast<int>(mgjoin_nccl_status_), #call, __FILE__, __LINE__); \
  } while (0)
