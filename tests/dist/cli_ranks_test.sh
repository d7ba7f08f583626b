#!/usr/bin/env bash
# `mgjoin join` under mpirun (apps/mgjoin/join_ranks.hpp) on the CPU path, against the single-process
# `mgjoin join` of the same files: the count with 1 to 4 ranks; a materialized output in part directories
# whose manifest adds up to the count and that read back as one table (--r-dir); --json naming the ranks;
# a missing file ending every rank with one error line, printed once.
#   cli_ranks_test.sh MGJOIN MPIEXEC NUMPROC_FLAG
set -euo pipefail
mgjoin=$1 mpiexec=$2 np=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${MGJOIN_TEST_SEED:-$RANDOM}
echo "cli_ranks_test: MGJOIN_TEST_SEED=$seed"
fail() { echo "FAILED: $*" >&2; exit 1; }

"$mgjoin" generate --workload B --scale 2e-5 --selectivity 0.7 --zipf 0.9 --hot-key 0.3 --seed "$seed" \
  --out-dir "$dir/in" > /dev/null 2>&1
files=(--r-key "$dir/in/r_key.npy" --r-payload "$dir/in/r_payload.npy" --s-key "$dir/in/s_key.npy"
       --s-payload "$dir/in/s_payload.npy" --gpus 0)
want=$("$mgjoin" join "${files[@]}" --count 2> /dev/null)
[ "$want" -gt 0 ] || fail "the single process counted $want"
for n in 1 2 3 4; do
  got=$("$mpiexec" "$np" "$n" "$mgjoin" join "${files[@]}" --count 2> /dev/null)
  [ "$got" = "$want" ] || fail "$n ranks counted '$got', one process $want"
done

"$mpiexec" "$np" 3 "$mgjoin" join "${files[@]}" --out-dir "$dir/out" 2> /dev/null
python3 - "$dir/out" "$want" <<'PY' || fail "the parts do not hold the output"
import json, os, sys
out, want = sys.argv[1], int(sys.argv[2])
m = json.load(open(os.path.join(out, "manifest.json")))
assert m["format"] == "mgjoin-parts" and m["ranks"] == 3 and m["rows"] == want, m
assert sum(p["rows"] for p in m["parts"]) == want, m
for p in m["parts"]:
    for c in m["columns"]:
        size = os.path.getsize(os.path.join(out, p["dir"], c))
        assert size >= 8 * p["rows"] + 64, (p, c, size)  # .npy header, then 8-byte values
PY

# The parts read as one table (--r-dir of a manifest): joined with the single process's output, they
# count what that output joined with itself counts (the same key multiset).
"$mgjoin" join "${files[@]}" --out-dir "$dir/one" 2> /dev/null
self=$("$mgjoin" join --r-dir "$dir/one" --s-dir "$dir/one" --gpus 0 --count 2> /dev/null)
parts=$("$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/one" --gpus 0 --count 2> /dev/null)
[ "$parts" = "$self" ] || fail "the parts as one table counted $parts, the single output $self"

json=$("$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --count --json 2> /dev/null)
python3 -c 'import json, sys; j = json.loads(sys.argv[1]); assert j["ranks"] == 2 and j["count"] == int(sys.argv[2]), j' \
  "$json" "$want" || fail "--json: $json"

if "$mpiexec" "$np" 2 "$mgjoin" join --r-key "$dir/in/missing.npy" --s-key "$dir/in/s_key.npy" --gpus 0 --count \
  > /dev/null 2> "$dir/err"; then
  fail "a missing file: exit status 0"
fi
lines=$(grep -c "^mgjoin: error: rank 0: .*missing.npy" "$dir/err" || true)
[ "$lines" = 1 ] || fail "a missing file: $lines error lines: $(cat "$dir/err")"
echo "cli_ranks_test: passed"
