#!/usr/bin/env bash
# `mgjoin join` under mpirun (apps/mgjoin/join_ranks.hpp) on the CPU path, against the single-process
# `mgjoin join` of the same files: the count with 2 to 4 ranks (one rank runs as one process); a
# materialized output in part directories holding exactly the single process's rows, whose manifest
# adds up and which read back as one table (--r-dir); --json naming the ranks; a missing file and an
# option the ranks do not take each ending every rank with one error line, printed once, and the exit
# status one process would give; a rank killed before the exchange or before the commit ending the job
# with the launcher's word on which rank died and nothing committed.
#   cli_ranks_test.sh MGJOIN MPIEXEC NUMPROC_FLAG
set -euo pipefail
mgjoin=$1 mpiexec=$2 np=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seed=${MGJOIN_TEST_SEED:-$RANDOM}
echo "cli_ranks_test: MGJOIN_TEST_SEED=$seed"
fail() {
  echo "FAILED: $*" >&2
  [ -f "$dir/log" ] && tail -20 "$dir/log" >&2
  exit 1
}
run() { "$@" 2>> "$dir/log" || fail "exit status $? of: $*"; }

run "$mgjoin" generate --workload B --scale 2e-5 --selectivity 0.7 --zipf 0.9 --hot-key 0.3 --seed "$seed" \
  --out-dir "$dir/in" > /dev/null
files=(--r-key "$dir/in/r_key.npy" --r-payload "$dir/in/r_payload.npy" --s-key "$dir/in/s_key.npy"
       --s-payload "$dir/in/s_payload.npy" --gpus 0)
want=$(run "$mgjoin" join "${files[@]}" --count)
[ "$want" -gt 0 ] || fail "the single process counted $want"
for n in 1 2 3 4; do
  got=$(run "$mpiexec" "$np" "$n" "$mgjoin" join "${files[@]}" --count)
  [ "$got" = "$want" ] || fail "$n ranks counted '$got', one process $want"
done

# Materialized: the parts hold exactly the single process's rows (as multisets of (key, r, s)).
run "$mpiexec" "$np" 3 "$mgjoin" join "${files[@]}" --out-dir "$dir/out"
run "$mgjoin" join "${files[@]}" --out-dir "$dir/one"
python3 - "$dir/out" "$dir/one" "$want" <<'PY' || fail "the parts do not hold the single process's rows"
import ast, json, os, struct, sys
out, one, want = sys.argv[1], sys.argv[2], int(sys.argv[3])

def npy_u64(path):  # a 1-D little-endian 8-byte .npy file, without numpy
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + n
    header = ast.literal_eval(data[start - n:start].decode())
    assert header["descr"][1:] in ("u8", "i8"), (path, header)
    body = data[start:]
    assert len(body) == 8 * header["shape"][0], path
    return list(struct.unpack("<%dQ" % header["shape"][0], body))

m = json.load(open(os.path.join(out, "manifest.json")))
assert m["format"] == "mgjoin-parts" and m["ranks"] == 3 and m["rows"] == want, m
assert m["columns"] == ["key.npy", "r.payload.npy", "s.payload.npy"], m
rows = []
for p in m["parts"]:
    cols = [npy_u64(os.path.join(out, p["dir"], c)) for c in m["columns"]]
    assert all(len(c) == p["rows"] for c in cols), p
    rows += zip(*cols)
single = list(zip(*[npy_u64(os.path.join(one, c)) for c in m["columns"]]))
assert len(rows) == want and sorted(rows) == sorted(single), (len(rows), len(single))
PY

# The parts read as one table (--r-dir of a manifest) join as the single output does.
self=$(run "$mgjoin" join --r-dir "$dir/one" --s-dir "$dir/one" --gpus 0 --count)
parts=$(run "$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/one" --gpus 0 --count)
[ "$parts" = "$self" ] || fail "the parts as one table counted $parts, the single output $self"

json=$(run "$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --count --json)
python3 -c 'import json, sys; j = json.loads(sys.argv[1]); assert j["ranks"] == 2 and j["count"] == int(sys.argv[2]), j' \
  "$json" "$want" || fail "--json: $json"

# Errors: one line, printed once, with one process's exit status (2: bad input).
expect_error() {  # pattern, then the mgjoin join arguments
  local pattern=$1 status=0
  shift
  "$mpiexec" "$np" 2 "$mgjoin" join "$@" > /dev/null 2> "$dir/err" || status=$?
  [ "$status" -ne 0 ] || fail "$pattern: exit status 0"
  local lines
  lines=$(grep -c "^mgjoin: error: rank 0: .*$pattern" "$dir/err" || true)
  [ "$lines" = 1 ] || fail "$pattern: $lines error lines (exit status $status): $(cat "$dir/err")"
  grep -q "exit code: *2\|Exit code: *2" "$dir/err" || [ "$status" -eq 2 ] || fail "$pattern: exit status $status, not 2"
}
expect_error "missing.npy" --r-key "$dir/in/missing.npy" --s-key "$dir/in/s_key.npy" --gpus 0 --count
expect_error "inner joins only" "${files[@]}" --how left --count
# A rank killed mid-run (as by the OOM killer): the launcher ends the job within the test's time, says
# which rank died, exits non-zero, and nothing is committed (no manifest, no part file under its name).
for step in read staged; do
  status=0
  MGJOIN_TEST_KILL_RANK=1:$step timeout 120 "$mpiexec" "$np" 3 "$mgjoin" join "${files[@]}" --out-dir "$dir/killed-$step" \
    > /dev/null 2> "$dir/err" || status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "rank 1 killed at $step: exit status $status: $(cat "$dir/err")"
  grep -qi "rank 1.*signal 9\|rank 1.*killed" "$dir/err" || fail "rank 1 killed at $step: the launcher did not name it: $(cat "$dir/err")"
  [ ! -e "$dir/killed-$step/manifest.json" ] || fail "rank 1 killed at $step: a manifest was written"
  committed=$(find "$dir/killed-$step" -name '*.npy' | wc -l)
  [ "$committed" = 0 ] || fail "rank 1 killed at $step: $committed part files committed"
done
echo "cli_ranks_test: passed"
