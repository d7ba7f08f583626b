#pragma once
// RAII NCCL communicators for a set of GPUs in this process (ncclCommInitAll): rank i is devices[i].
// NVLink multicast (NVLS) is switched off before any communicator exists: on the shared GPU machines
// it can take GPUs out of service (DEVICE.md, "Rules of the machine"). Do not remove the setenv.
#include "p2p/nccl_error.hpp"

#include <mgjoin/error.hpp>

#include <nccl.h>

#include <cstdlib>
#include <span>
#include <utility>
#include <vector>

namespace mgjoin::p2p {

class NcclComms {
 public:
  explicit NcclComms(std::span<const int> devices) : devices_(devices.begin(), devices.end()) {
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // hard safety rule, overriding any inherited value
    comms_.resize(devices_.size());
    MGJOIN_NCCL_TRY(nccl().comm_init_all(comms_.data(), static_cast<int>(devices_.size()), devices_.data()));
  }
  ~NcclComms() {
    for (auto c : comms_)
      if (c) nccl().comm_destroy(c);
  }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  /// The communicator of rank `rank` (the GPU devices()[rank]).
  ncclComm_t comm(int rank) const { return comms_.at(rank); }
  std::span<const int> devices() const { return devices_; }

 private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
};

}  // namespace mgjoin::p2p
