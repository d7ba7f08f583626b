#!/usr/bin/env bash
# Runs `mgjoin bench` cases on a GPU machine from a carried binary folder (default .devbin):
# each line of $MGJOIN_CASES (or the arguments) is one bench argument list. Tables go to
# $OUT/bench.txt, JSON lines to $OUT/bench.jsonl; a one-line summary per case is printed.
set -uo pipefail
source "$(dirname "$0")/device-env.sh"  # cd to the root, NCCL_NVLS_ENABLE=0, $B (binaries), $OUT (logs)
run_case() {
  local args="$1" start=$(date +%s)
  echo "### mgjoin bench $args   ($(date -u +%FT%TZ), $(hostname))" >> "$OUT/bench.txt"
  timeout "${MGJOIN_CASE_TIMEOUT:-240}" "$B/mgjoin" bench $args --json > "$OUT/case.json" 2>> "$OUT/bench.txt"
  local rc=$?
  if [ $rc -eq 0 ]; then
    python3 -c "import json,sys; j=json.load(open('$OUT/case.json')); j['args']='$args'; print(json.dumps(j))" >> "$OUT/bench.jsonl"
    python3 - "$OUT/case.json" "$args" <<'PY' | tee -a "$OUT/bench.txt"
import json, sys
j = json.load(open(sys.argv[1]))
ph = " ".join(f"{p['name']}={p['median_seconds']:.3f}" for p in j.get("phases", []) if p['median_seconds'] > 0.0005)
f, fk, fo = j['pcie_floor_seconds'], j.get('pcie_floor_keys_seconds', 0), j.get('output_d2h_floor_seconds', 0)
m = j['median_seconds']
r = lambda x: m / x if x else 0
print(f"{sys.argv[2]}: [{j.get('strategy', '?')}] median {m:.4f} s of {j['run_seconds']}, {j['count']} matches"
      f"{' (verified)' if 'verified_count' in j else ''}; floor {f:.4f} s ({r(f):.2f}x), keys {fk:.4f} s ({r(fk):.2f}x),"
      f" output D2H {fo:.4f} s; H2D {j.get('h2d_gbps', 0):.1f} GB/s {j.get('h2d_gbps_source', '')}; {ph}")
t = j.get("tables", {})
if "gather_floor_seconds" in t:
    g = next((p['median_seconds'] for p in j.get("phases", []) if p['name'] == "table.gather"), 0)
    print(f"  tables ({t['columns']} columns, {t['how']}, {t['materialization']}): table.gather {g:.4f} s, gather floor"
          f" {t['gather_floor_seconds']:.4f} s ({g / t['gather_floor_seconds']:.2f}x), into touched memory"
          f" {t['gather_into_touched_memory_seconds']:.4f} s")
PY
  else
    echo "$args: rc=$rc ($(( $(date +%s) - start )) s)" | tee -a "$OUT/bench.txt"
  fi
}
if [ $# -gt 0 ]; then for c in "$@"; do run_case "$c"; done; else
  while IFS= read -r c; do [ -n "$c" ] && run_case "$c"; done <<< "${MGJOIN_CASES:-}"
fi
