#!/usr/bin/env bash
# `mgjoin join` under mpirun (apps/mgjoin/join_ranks.hpp) on the CPU path, against the single-process
# `mgjoin join` of the same files: the count with 2 to 4 ranks (one rank runs as one process); a
# materialized output in part directories holding exactly the single process's rows, whose manifest
# adds up and which read back as one table (--r-dir); tables (directories of columns, a composite key of
# mixed widths) joined by every --how, as columns and as gather maps, whose parts hold exactly the
# single process's rows; --json naming the ranks; a missing file and an input the ranks do not take
# each ending every rank with one error line, printed once, and the exit status one process would
# give; a rank killed before the exchange or before the commit ending the job with the launcher's word
# on which rank died and nothing committed.
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
cat > "$dir/npy.py" <<'PY'
import ast, json, os, struct

FORMATS = {"i1": "b", "u1": "B", "b1": "?", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q",
           "f4": "f", "f8": "d"}

def read(path):  # a 1-D little-endian .npy file, without numpy
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if data[6] == 1 else 12) + n
    header = ast.literal_eval(data[start - n:start].decode())
    code = FORMATS[header["descr"][1:]]
    rows = header["shape"][0]
    body = data[start:]
    assert len(body) == struct.calcsize("<%d%s" % (rows, code)), path
    return list(struct.unpack("<%d%s" % (rows, code), body))

def write(path, descr, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), FORMATS[descr[1:]]), *values))

def same_rows(parts_dir, one_dir, want=None):
    """The parts of parts_dir hold the rows of one_dir's files (as multisets), column by column."""
    m = json.load(open(os.path.join(parts_dir, "manifest.json")))
    files = sorted(f for f in os.listdir(one_dir) if f.endswith(".npy"))
    assert m["format"] == "mgjoin-parts" and sorted(m["columns"]) == files, (m["columns"], files)
    rows = []
    for p in m["parts"]:
        cols = [read(os.path.join(parts_dir, p["dir"], c)) for c in files]
        assert all(len(c) == p["rows"] for c in cols), p
        rows += zip(*cols)
    single = list(zip(*[read(os.path.join(one_dir, c)) for c in files]))
    assert len(rows) == m["rows"] == len(single) and (want is None or len(rows) == want), (len(rows), len(single))
    assert sorted(rows) == sorted(single), "rows differ"
    return m
PY
python3 - "$dir" "$want" <<'PY' || fail "the parts do not hold the single process's rows"
import os, sys
sys.path.insert(0, sys.argv[1])
import npy
m = npy.same_rows(os.path.join(sys.argv[1], "out"), os.path.join(sys.argv[1], "one"), int(sys.argv[2]))
assert m["ranks"] == 3 and m["columns"] == ["key.npy", "r.payload.npy", "s.payload.npy"], m
PY

# Tables: directories of columns, a composite key (int16, int32) with a hot key and unmatched rows, every
# --how, as columns and as gather maps: the parts of 3 ranks hold the single process's rows.
python3 - "$dir" "$seed" <<'PY' || fail "making the tables"
import os, random, sys
sys.path.insert(0, sys.argv[1])
import npy
rng = random.Random(int(sys.argv[2]))
for side, n, extra in (("left", 3001, ("v", "<f8")), ("right", 4003, ("w", "<i8"))):
    d = os.path.join(sys.argv[1], side)
    os.makedirs(d)
    hot = [i % 3 == 0 for i in range(n)] if side == "right" else [i % 50 == 0 for i in range(n)]
    npy.write(os.path.join(d, "y.npy"), "<i2", [7 if h else rng.randrange(-40, 40) for h in hot])
    npy.write(os.path.join(d, "id.npy"), "<i4", [-5 if h else rng.randrange(-300, 300) for h in hot])
    name, descr = extra
    npy.write(os.path.join(d, name + ".npy"), descr,
              [rng.random() for _ in range(n)] if descr == "<f8" else [rng.randrange(-2**62, 2**62) for _ in range(n)])
    npy.write(os.path.join(d, "ok.npy"), "|b1", [rng.random() < 0.5 for _ in range(n)])
PY
tables=(--r-dir "$dir/left" --s-dir "$dir/right" --r-key y,id --s-key y,id --gpus 0)
for how in inner left right full semi anti; do
  for form in columns maps; do
    run "$mgjoin" join "${tables[@]}" --how "$how" --output "$form" --out-dir "$dir/t1-$how-$form"
    run "$mpiexec" "$np" 3 "$mgjoin" join "${tables[@]}" --how "$how" --output "$form" --out-dir "$dir/t3-$how-$form"
    python3 - "$dir" "$how" "$form" <<'PY' || fail "tables, --how $how --output $form: the parts do not hold the single process's rows"
import os, sys
sys.path.insert(0, sys.argv[1])
import npy
d, how, form = sys.argv[1:]
npy.same_rows(os.path.join(d, "t3-%s-%s" % (how, form)), os.path.join(d, "t1-%s-%s" % (how, form)))
PY
  done
  one=$(run "$mgjoin" join "${tables[@]}" --how "$how" --count)
  four=$(run "$mpiexec" "$np" 4 "$mgjoin" join "${tables[@]}" --how "$how" --count)
  [ "$one" = "$four" ] || fail "tables, --how $how: 4 ranks counted '$four', one process $one"
done

# The parts read as one table (--r-dir of a manifest) join as the single output does.
self=$(run "$mgjoin" join --r-dir "$dir/one" --s-dir "$dir/one" --gpus 0 --count)
parts=$(run "$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/one" --gpus 0 --count)
[ "$parts" = "$self" ] || fail "the parts as one table counted $parts, the single output $self"
# ... and under mpirun, each rank reading its rows across the 3 parts (2 and 4 ranks: slices span parts),
# as the left table and as both (the rows' count with themselves is quadratic in each key's rows: any row
# read twice or missed changes it).
for n in 2 4; do
  got=$(run "$mpiexec" "$np" "$n" "$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/one" --gpus 0 --count)
  [ "$got" = "$self" ] || fail "$n ranks joining the parts counted '$got', one process $self"
done
both=$(run "$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/out" --gpus 0 --count)
got=$(run "$mpiexec" "$np" 4 "$mgjoin" join --r-dir "$dir/out" --s-dir "$dir/out" --gpus 0 --count)
[ "$got" = "$both" ] || fail "4 ranks joining the parts with themselves counted '$got', one process $both"

json=$(run "$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --count --json)
python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert j["ranks"] == 2 and j["count"] == int(sys.argv[2]), j
assert j["seconds"] > 0 and j["strategy"] and j["executor"].startswith("CPU") and j["phases"], j
assert "materialization" not in j, j  # a count materializes nothing
assert j["read_seconds"] >= 0 and j["start_seconds"] >= 0 and j["write_seconds"] >= 0, j' \
  "$json" "$want" || fail "--json: $json"

# An output directory that holds a table is refused, unless --overwrite: then the new parts replace the
# old table whole (3 ranks' parts by 2 ranks': no part-2 is left, nor a whole-table file beside them).
cp -r "$dir/out" "$dir/again"
cp "$dir/one/key.npy" "$dir/again/key.npy"
status=0
"$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --out-dir "$dir/again" > /dev/null 2> "$dir/err" || status=$?
[ "$status" -ne 0 ] && grep -q "already holds a table.*--overwrite" "$dir/err" || fail "a second run into out/: $(cat "$dir/err")"
[ -e "$dir/again/part-2" ] || fail "a refused run changed the old table"
run "$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --out-dir "$dir/again" --overwrite
[ "$(ls "$dir/again")" = "$(printf 'manifest.json\npart-0\npart-1')" ] || fail "--overwrite left: $(ls "$dir/again")"
python3 - "$dir" "$want" <<'PY' || fail "--overwrite: the new parts do not hold the single process's rows"
import os, sys
sys.path.insert(0, sys.argv[1])
import npy
assert npy.same_rows(os.path.join(sys.argv[1], "again"), os.path.join(sys.argv[1], "one"), int(sys.argv[2]))["ranks"] == 2
PY
# A run with --overwrite that fails before its commit leaves the earlier table as it was.
MGJOIN_TEST_KILL_RANK=1:read timeout 120 "$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --out-dir "$dir/again" \
  --overwrite > /dev/null 2>&1 && fail "a rank killed before the commit: exit status 0"
python3 - "$dir" "$want" <<'PY' || fail "a failed --overwrite run damaged the earlier table"
import os, sys
sys.path.insert(0, sys.argv[1])
import npy
npy.same_rows(os.path.join(sys.argv[1], "again"), os.path.join(sys.argv[1], "one"), int(sys.argv[2]))
PY
# A part folder that is a link is not written through (it may lead to the user's own files).
mkdir -p "$dir/sym" "$dir/user"
echo precious > "$dir/user/precious.npy"
ln -s "$dir/user" "$dir/sym/part-1"
status=0
"$mpiexec" "$np" 2 "$mgjoin" join "${files[@]}" --out-dir "$dir/sym" --overwrite > /dev/null 2> "$dir/err" || status=$?
[ "$status" -ne 0 ] && grep -q "part-1: a link" "$dir/err" || fail "a linked part folder: status $status: $(cat "$dir/err")"
[ "$(cat "$dir/user/precious.npy")" = precious ] && [ "$(ls "$dir/user")" = precious.npy ] ||
  fail "a linked part folder: the files it leads to changed: $(ls "$dir/user")"

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
expect_error "rank-exchange rdma: expected auto, mpi or nccl" --r-key "$dir/in/r_key.npy" --s-key "$dir/in/s_key.npy" \
  --gpus 0 --count --rank-exchange rdma
if ! command -v nvidia-smi > /dev/null; then  # rows over NCCL need a GPU on every rank
  expect_error "RankExchange::Nccl: 2 ranks on this node need a GPU each; it has 0" --r-key "$dir/in/r_key.npy" \
    --s-key "$dir/in/s_key.npy" --gpus 0 --count --rank-exchange nccl
fi
# A rank killed mid-run (as by the OOM killer): the launcher ends the job within the test's time, says
# which rank died, exits non-zero, and nothing is committed (no manifest, no part file under its name).
for step in read staged; do
  status=0
  MGJOIN_TEST_KILL_RANK=1:$step timeout 120 "$mpiexec" "$np" 3 "$mgjoin" join "${files[@]}" --out-dir "$dir/killed-$step" \
    > /dev/null 2> "$dir/err" || status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "rank 1 killed at $step: exit status $status: $(cat "$dir/err")"
  # Open MPI names the rank it saw die; where a survivor's failure reaches it first, it names that one.
  grep -qiE "rank [0-9]+.*(signal 9|killed)|exited on signal 9" "$dir/err" ||
    fail "rank 1 killed at $step: the launcher did not say a rank died: $(cat "$dir/err")"
  [ ! -e "$dir/killed-$step/manifest.json" ] || fail "rank 1 killed at $step: a manifest was written"
  committed=0  # killed at read: not even the directory was made (it is made when there is output to write)
  [ ! -d "$dir/killed-$step" ] || committed=$(find "$dir/killed-$step" -name '*.npy' | wc -l)
  [ "$step" != read ] || [ ! -e "$dir/killed-$step" ] || fail "rank 1 killed at read: the output directory was made"
  [ "$committed" = 0 ] || fail "rank 1 killed at $step: $committed part files committed"
done
echo "cli_ranks_test: passed"
