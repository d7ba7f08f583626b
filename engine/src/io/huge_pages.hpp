#pragma once
// First touch of fresh pageable memory costs a page fault per 4 KiB; on virtual machines that alone
// caps filling a new column at ~0.6 GB/s. Transparent huge pages (THP mode "madvise" is common)
// cut the faults 512-fold, so columns about to be filled by the generator or a file read ask for them.
#include <mgjoin/types.hpp>

#include <sys/mman.h>

#include <cstdint>

namespace mgjoin::detail {

/// Advises huge pages for the 2 MiB-aligned interior of a pageable column (a hint: errors ignored).
inline void advise_huge_pages(HostColumn& column) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (column.memory_kind() != MemoryKind::Pageable || column.bytes() < 2 * kHuge) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(column.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(column.data()) + column.bytes()) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace mgjoin::detail
