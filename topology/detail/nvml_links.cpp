// The few NVML types and entry points mgjoin needs, declared here with the ABI of nvml.h
// (NVML API v2; unchanged since CUDA 9) and resolved with dlopen.
#include "topology/detail/nvml_links.hpp"

#include "topology/log.hpp"
#include "topology/topology.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>

namespace mgjoin::topology::detail {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper/Blackwell: 18)
enum nvmlEnableState_t : int { kNvmlFeatureDisabled = 0, kNvmlFeatureEnabled = 1 };
enum nvmlIntNvLinkDeviceType_t : int { kNvLinkGpu = 0, kNvLinkIbmNpu = 1, kNvLinkSwitch = 2, kNvLinkUnknown = 0xff };

struct nvmlPciInfo_t {  // nvmlPciInfo_st
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*handle_by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t*) = nullptr;  // optional
};

/// dlopen'ed libnvidia-ml with nvmlInit done; shuts NVML down and closes the library on exit.
class NvmlSession {
 public:
  NvmlSession() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      log_verbose("NVML not found (libnvidia-ml.so.1): NVLink wiring unknown, using CUDA and PCIe only");
      return;
    }
    resolve(api_.init, "nvmlInit_v2");
    resolve(api_.shutdown, "nvmlShutdown");
    resolve(api_.handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    resolve(api_.link_state, "nvmlDeviceGetNvLinkState");
    resolve(api_.remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    resolve(api_.remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    const bool complete = api_.init && api_.shutdown && api_.handle_by_bus_id && api_.link_state && api_.remote_pci;
    ready_ = complete && api_.init() == kNvmlSuccess;
    if (!ready_) log_verbose("NVML present but not usable: NVLink wiring unknown");
  }
  ~NvmlSession() {
    if (ready_) api_.shutdown();
    if (lib_) dlclose(lib_);
  }
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  bool ready() const { return ready_; }
  const NvmlApi& api() const { return api_; }

 private:
  template <class F>
  void resolve(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib_, name));
  }
  void* lib_ = nullptr;
  NvmlApi api_;
  bool ready_ = false;
};

bool links_to_switch(const NvmlApi& api, nvmlDevice_t dev, unsigned link) {
  if (!api.remote_type) return false;
  nvmlIntNvLinkDeviceType_t type = kNvLinkUnknown;
  return api.remote_type(dev, link, &type) == kNvmlSuccess && type == kNvLinkSwitch;
}

// Index of the GPU at the far end of `link`, or -1 (a CPU/NPU, an unknown device).
int remote_gpu(const NvmlApi& api, nvmlDevice_t dev, unsigned link, const std::vector<std::string>& bus_ids) {
  nvmlPciInfo_t pci{};
  if (api.remote_pci(dev, link, &pci) != kNvmlSuccess) return -1;
  char id[32];
  std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", pci.domain & 0xffffu, pci.bus, pci.device);
  const auto it = std::find(bus_ids.begin(), bus_ids.end(), std::string(id));
  return it == bus_ids.end() ? -1 : static_cast<int>(it - bus_ids.begin());
}

}  // namespace

NvLinkWiring query_nvlink_wiring(const std::vector<std::string>& pci_bus_ids) {
  const int n = static_cast<int>(pci_bus_ids.size());
  NvLinkWiring w;
  w.direct.assign(static_cast<std::size_t>(n * n), 0);
  w.switch_links.assign(static_cast<std::size_t>(n), 0);
  if (n == 0) return w;
  NvmlSession nvml;
  if (!nvml.ready()) return w;
  const NvmlApi& api = nvml.api();
  for (int i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    if (api.handle_by_bus_id(pci_bus_ids[static_cast<std::size_t>(i)].c_str(), &dev) != kNvmlSuccess) {
      log_verbose("NVML does not know GPU " + pci_bus_ids[static_cast<std::size_t>(i)] + ": NVLink wiring unknown");
      return w;
    }
    for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
      nvmlEnableState_t state = kNvmlFeatureDisabled;
      if (api.link_state(dev, link, &state) != kNvmlSuccess || state != kNvmlFeatureEnabled) continue;
      if (links_to_switch(api, dev, link)) {
        ++w.switch_links[static_cast<std::size_t>(i)];
      } else if (const int j = remote_gpu(api, dev, link, pci_bus_ids); j >= 0 && j != i) {
        ++w.direct[static_cast<std::size_t>(i * n + j)];
      }
    }
  }
  w.available = true;
  return w;
}

}  // namespace mgjoin::topology::detail
