#!/usr/bin/env bash
# No binary built on libengine needs libnccl: NCCL is loaded when an NCCL exchange is first used
# (p2p/nccl_api.hpp). Usage: no_nccl_needed_test.sh ELF...  (checks each one's DT_NEEDED entries).
set -euo pipefail
status=0
for elf in "$@"; do
  needed=$(readelf -d "$elf" | grep '(NEEDED)' || true)
  [[ -n "$needed" ]] || { echo "no NEEDED entries in $elf: not a dynamically linked ELF file?"; status=1; continue; }
  if grep -qi 'libnccl' <<<"$needed"; then
    echo "FAIL: $elf needs libnccl:"; echo "$needed"; status=1
  else
    echo "ok: $(basename "$elf") needs $(grep -o '\[.*\]' <<<"$needed" | tr -d '[]' | tr '\n' ' ')"
  fi
done
exit $status
