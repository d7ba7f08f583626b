#pragma once
// The physical memory under a stack allocator: one allocation made at construction, freed at destruction.
// A backing provides base(), capacity(), alignment() (of the virtual allocations handed out), device()
// (-1 for host memory) and name() (used in error messages). Backings are neither copyable nor movable.
//
// A pinned or device backing may also be a Region of memory that another owner allocated (a block of
// another stack): it is then neither allocated nor freed here. Two stacks over two regions let two
// phases run at once and free their blocks in any order between them (the bucketed flow's pass 2
// holds one bucket group in each).
#include <cstddef>
#include <string>

namespace mgjoin::alloc {

/// Memory that a backing borrows: it must outlive the stack over it, and be of the backing's kind.
struct Region {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
};

/// Plain host memory (the CPU path and tests). Virtual allocations are 16-byte aligned unless asked.
class HostBacking {
 public:
  explicit HostBacking(std::size_t capacity, std::size_t alignment = 16);
  ~HostBacking();
  HostBacking(const HostBacking&) = delete;
  HostBacking& operator=(const HostBacking&) = delete;

  std::byte* base() const { return base_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t alignment() const { return alignment_; }
  int device() const { return -1; }
  std::string name() const { return "host stack"; }

 private:
  std::size_t capacity_;
  std::size_t alignment_;
  std::byte* base_;
};

/// Page-locked host memory, cudaHostAllocPortable (pinned for every GPU). With `mapped`, also
/// cudaHostAllocMapped: under UVA the host pointer is then valid in kernels on every GPU, so a kernel can
/// write results straight to host memory. Virtual allocations are 16-byte aligned.
class PinnedHostBacking {
 public:
  explicit PinnedHostBacking(std::size_t capacity, bool mapped = false);
  /// Over pinned memory allocated elsewhere (not mapped); its base must be 16-byte aligned.
  explicit PinnedHostBacking(Region region);
  ~PinnedHostBacking();
  PinnedHostBacking(const PinnedHostBacking&) = delete;
  PinnedHostBacking& operator=(const PinnedHostBacking&) = delete;

  std::byte* base() const { return base_; }
  std::size_t capacity() const { return capacity_; }
  static constexpr std::size_t alignment() { return 16; }
  int device() const { return -1; }
  bool mapped() const { return mapped_; }
  std::string name() const { return mapped_ ? "mapped pinned host stack" : "pinned host stack"; }

 private:
  std::size_t capacity_;
  bool mapped_;
  bool owned_ = true;
  std::byte* base_ = nullptr;
};

/// Device memory of one GPU (cudaMalloc under a DeviceGuard). Virtual allocations are 128-byte aligned,
/// the granularity of coalesced global-memory transactions.
class DeviceBacking {
 public:
  DeviceBacking(int device, std::size_t capacity);
  /// Over memory of `device` allocated elsewhere; its base must be 128-byte aligned.
  DeviceBacking(int device, Region region);
  ~DeviceBacking();
  DeviceBacking(const DeviceBacking&) = delete;
  DeviceBacking& operator=(const DeviceBacking&) = delete;

  std::byte* base() const { return base_; }
  std::size_t capacity() const { return capacity_; }
  static constexpr std::size_t alignment() { return 128; }
  int device() const { return device_; }
  std::string name() const { return "device stack of GPU " + std::to_string(device_); }

 private:
  int device_;
  std::size_t capacity_;
  bool owned_ = true;
  std::byte* base_ = nullptr;
};

}  // namespace mgjoin::alloc
