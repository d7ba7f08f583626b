#pragma once
// NCCL, loaded when first used: libengine and its users do not link libnccl (218 MB), so importing the
// Python package and one-GPU or CPU joins need no NCCL. Every NCCL call in mgjoin goes through nccl().
#include <nccl.h>

namespace mgjoin::p2p {

/// The NCCL functions mgjoin calls, resolved from the loaded library (the names drop NCCL's prefix).
struct NcclApi {
  decltype(&::ncclGetErrorString) get_error_string;
  decltype(&::ncclGetUniqueId) get_unique_id;
  decltype(&::ncclCommInitAll) comm_init_all;
  decltype(&::ncclCommInitRank) comm_init_rank;
  decltype(&::ncclCommSplit) comm_split;
  decltype(&::ncclCommDestroy) comm_destroy;
  decltype(&::ncclCommAbort) comm_abort;
  decltype(&::ncclCommCount) comm_count;
  decltype(&::ncclCommUserRank) comm_user_rank;
  decltype(&::ncclCommCuDevice) comm_cu_device;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error;
  decltype(&::ncclGroupStart) group_start;
  decltype(&::ncclGroupEnd) group_end;
  decltype(&::ncclSend) send;
  decltype(&::ncclRecv) recv;
};

/// Environment variable naming the NCCL library to load instead of "libnccl.so.2" (a path or a name).
inline constexpr const char* kNcclLibraryEnv = "MGJOIN_NCCL_LIBRARY";

/// NCCL's functions, from the library loaded on the first call (dlopen of $MGJOIN_NCCL_LIBRARY, else
/// "libnccl.so.2" on the loader's path). Throws mgjoin::Error saying so when it is absent or lacks one
/// of them; a later call tries again. Thread-safe.
const NcclApi& nccl();

}  // namespace mgjoin::p2p
