#!/usr/bin/env bash
# `mpirun -np 2 mgjoin join` on a machine with 2 GPUs (scripts/device-pending.sh ranks-tests; not in CI):
# the rows over NCCL, the flow on the ranks' GPUs whole (--json: rank_exchange nccl, phase ranks.gpus),
# counts equal to one process's on random, skewed and hot-key inputs, counted and materialized (the
# parts' rows add up); then a rank killed just before the rows go GPU to GPU (its peers waiting on it in
# NCCL) ends the job within the test's time, with the launcher's word on the rank and nothing committed.
#   cli_ranks_gpus_test.sh MGJOIN
set -euo pipefail
mgjoin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${MGJOIN_TEST_SEED:-$RANDOM}
echo "cli_ranks_gpus_test: MGJOIN_TEST_SEED=$seed"
mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
     mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE -x MGJOIN_TEST_KILL_RANK)
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

cases=("--scale 1e-3" "--scale 1e-3 --zipf 1.0" "--scale 1e-3 --hot-key 0.5 --selectivity 0.8")
for i in "${!cases[@]}"; do
  # shellcheck disable=SC2086  # the case's flags split on purpose
  "$mgjoin" generate --workload B ${cases[$i]} --seed $((seed + i)) --out-dir "$dir/in$i" > /dev/null
  files=(--r-key "$dir/in$i/r_key.npy" --r-payload "$dir/in$i/r_payload.npy" --s-key "$dir/in$i/s_key.npy"
         --s-payload "$dir/in$i/s_payload.npy")
  want=$("$mgjoin" join "${files[@]}" --gpus 0 --count)
  "${mpi[@]}" "$mgjoin" join "${files[@]}" --gpus 1 --count --json > "$dir/run.json" || fail "${cases[$i]}: count run failed"
  python3 - "$want" "${cases[$i]}" "$dir/run.json" <<'PY' || fail "${cases[$i]}: see above"
import json, sys
want, case = int(sys.argv[1]), sys.argv[2]
j = json.load(open(sys.argv[3]))
phases = [p["name"] for p in j["phases"]]
assert j["count"] == want, f"{case}: 2 ranks counted {j['count']}, one process {want}"
assert j["ranks"] == 2 and j["rank_exchange"] == "nccl", f"{case}: ranks {j['ranks']}, exchange {j['rank_exchange']}"
assert "ranks.gpus" in phases, f"{case}: not joined on the ranks' GPUs: phases {phases}"
print(f"{case}: {want} rows counted on the ranks' GPUs")
PY
  "${mpi[@]}" "$mgjoin" join "${files[@]}" --gpus 1 --out-dir "$dir/out$i" > /dev/null || fail "${cases[$i]}: materialized run failed"
  python3 - "$dir/out$i/manifest.json" "$want" <<'PY' || fail "${cases[$i]}: materialized parts"
import json, sys
m = json.load(open(sys.argv[1]))
rows = sum(p["rows"] for p in m["parts"])
assert rows == int(sys.argv[2]), f"the parts hold {rows} rows, one process counted {sys.argv[2]}"
PY
done

# A rank killed just before the rows go GPU to GPU: the launcher ends the job, nothing is committed.
status=0
MGJOIN_TEST_KILL_RANK=1:nccl timeout 120 "${mpi[@]}" "$mgjoin" join "${files[@]}" --gpus 1 --out-dir "$dir/killed" \
  > /dev/null 2> "$dir/err" || status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "rank 1 killed before NCCL: exit status $status: $(cat "$dir/err")"
grep -qiE "rank [0-9]+.*(signal 9|killed)|exited on signal 9" "$dir/err" ||
  fail "rank 1 killed before NCCL: the launcher did not say a rank died: $(cat "$dir/err")"
[ ! -e "$dir/killed/manifest.json" ] || fail "rank 1 killed before NCCL: a manifest was written"
echo "cli_ranks_gpus_test: passed"
