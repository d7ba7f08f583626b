// NCCL loaded with dlopen on first use (p2p/nccl_api.hpp); nccl.h gives the signatures, so a library
// whose functions changed signature would be a new soname (libnccl.so.3), which is never loaded.
#include "p2p/nccl_api.hpp"

#include <mgjoin/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace mgjoin::p2p {

namespace {

constexpr const char* kDefaultLibrary = "libnccl.so.2";

[[noreturn]] void throw_missing(const std::string& library, const std::string& why) {
  throw Error("NCCL (" + library + ") is needed for the NCCL exchange and was not found: " + why +
              "; install NCCL (e.g. Debian's libnccl2) where the loader finds it or name the library in " +
              kNcclLibraryEnv + ", or use the exchange \"copy\"");
}

class NcclLibrary {
 public:
  NcclLibrary() {
    const char* named = std::getenv(kNcclLibraryEnv);
    const std::string library = named && *named ? named : kDefaultLibrary;
    // RTLD_LOCAL: NCCL's symbols stay out of the global namespace; a program that links NCCL itself
    // gets its own copy back (the same soname is loaded once).
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* why = dlerror();
      throw_missing(library, why ? why : "dlopen failed");
    }
    try {
      resolve(library, api_.get_error_string, "ncclGetErrorString");
      resolve(library, api_.get_unique_id, "ncclGetUniqueId");
      resolve(library, api_.comm_init_all, "ncclCommInitAll");
      resolve(library, api_.comm_init_rank, "ncclCommInitRank");
      resolve(library, api_.comm_split, "ncclCommSplit");
      resolve(library, api_.comm_destroy, "ncclCommDestroy");
      resolve(library, api_.comm_abort, "ncclCommAbort");
      resolve(library, api_.comm_count, "ncclCommCount");
      resolve(library, api_.comm_user_rank, "ncclCommUserRank");
      resolve(library, api_.comm_cu_device, "ncclCommCuDevice");
      resolve(library, api_.comm_get_async_error, "ncclCommGetAsyncError");
      resolve(library, api_.group_start, "ncclGroupStart");
      resolve(library, api_.group_end, "ncclGroupEnd");
      resolve(library, api_.send, "ncclSend");
      resolve(library, api_.recv, "ncclRecv");
    } catch (...) {
      dlclose(handle_);
      throw;
    }
  }
  // Never closed: communicators and NCCL's own threads may outlive any owner here, up to exit.
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  const NcclApi& api() const { return api_; }

 private:
  template <class F>
  void resolve(const std::string& library, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(handle_, name));
    if (!f) throw_missing(library, std::string("it has no ") + name + " (NCCL 2.18 or newer is needed)");
  }

  void* handle_ = nullptr;
  NcclApi api_{};
};

}  // namespace

const NcclApi& nccl() {
  // A static whose constructor throws is tried again on the next call (C++ [stmt.dcl]).
  static const NcclLibrary library;
  return library.api();
}

}  // namespace mgjoin::p2p
