#!/usr/bin/env bash
# The device machine's scripts, tried where they can be: on the CPU path, without GPUs. A session with
# device time should not spend it on a script that does not parse or a group that names a wrong option.
#   device_scripts_test.sh MGJOIN DIFFERENTIAL [MPIEXEC]
set -euo pipefail
mgjoin=$1 differential=$2 mpiexec=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

for s in "$root"/scripts/*.sh; do bash -n "$s" || fail "$s does not parse"; done

# A binary folder as scripts/pack-devbin.sh makes it (mgjoin, differential; no GPU suites here).
mkdir "$dir/bin"
ln -s "$mgjoin" "$dir/bin/mgjoin"
ln -s "$differential" "$dir/bin/differential"
cd "$root"

groups=(suites tables-bench gather-crossover ooc-bench ooc-h100 ranks-bench ranks-tests python tpch files-bench staging-bench stream-bench sanitize-cli
        racecheck-copart racecheck-e2e racecheck-table x4-tests x4-sanitize x4-memcheck-cli x4-racecheck x4-python x4-bench)
dry=$(MGJOIN_PENDING_DRY=1 OUT="$dir/out" bash scripts/device-pending.sh "${groups[@]}")
for step in suites differential tables-bench gather-crossover ooc-bench ooc-bench-hybrid ooc-h100 ranks-generate ranks-bench \
            ranks-tests-dist_join_mpi-nccl ranks-tests-dist_tables_mpi-nccl-external ranks-tests-cli python-build python-tests \
            python-compare-4-columns tpch files-bench files-bench-1gpu staging-bench-g4-0 stream-bench-g4-1 stream-bench-g4-0 sanitize-cli-memcheck racecheck-copart racecheck-table python-build \
            ranks-tests-dist_join_mpi-4 ranks-tests-dist_tables_mpi-4 x4-memcheck-cli x4-racecheck python-gpus-g1 python-gpus-g4 x4-bench; do
  grep -q "^\[$step\]" <<< "$dry" || fail "device-pending.sh's dry run has no step $step: $dry"
done
for used in $(grep -o 'scripts/[a-z-]*\.sh' scripts/device-pending.sh | sort -u); do
  [ -f "$used" ] || fail "device-pending.sh runs $used, which does not exist"
done
status=0
bash scripts/device-pending.sh no-such-group > /dev/null 2>&1 || status=$?
[ "$status" = 2 ] || fail "an unknown group: exit status $status, not 2"
# Racecheck runs the sanitize tier on mgjoin's kernels alone (CUB's radix sort under racecheck outlasts a
# device call); memcheck of the cli suite runs the sanitize tier's sizes on every kernel.
for step in x4-racecheck racecheck-copart racecheck-e2e racecheck-table; do
  grep "^\[$step\]" <<< "$dry" | grep -q "MGJOIN_SAN_TOOLS=racecheck .*MGJOIN_TEST_TIER=sanitize MGJOIN_SAN_KERNELS=ours" ||
    fail "device-pending.sh's $step: not racecheck of the sanitize tier on our kernels: $(grep "^\[$step\]" <<< "$dry")"
done
grep "^\[x4-memcheck-cli\]" <<< "$dry" | grep "MGJOIN_TEST_TIER=sanitize" | grep -qv "MGJOIN_SAN_KERNELS" ||
  fail "device-pending.sh's x4-memcheck-cli changed: $(grep "^\[x4-memcheck-cli\]" <<< "$dry")"

# Every bench case of the bench groups runs as given, but on the CPU path and tiny.
cases=$(grep "^\[[a-z-]*\] mgjoin bench " <<< "$dry" | sed 's/^\[[a-z-]*\] mgjoin bench //')
[ "$(wc -l <<< "$cases")" -ge 8 ] || fail "device-pending.sh's bench cases: $cases"
while read -r args; do
  args=$(sed -E 's/--gpus [0-9]+/--gpus 0/; s/--scale [0-9.e-]+/--scale 0.0001/; s/--repeat [0-9]+/--repeat 1/' <<< "$args")
  "$mgjoin" bench $args --warmup 0 > /dev/null 2> "$dir/err" || fail "mgjoin bench $args: $(cat "$dir/err")"
done <<< "$cases"

# device-bench.sh's summary of a table run, and device-tests.sh's differential step.
summary=$(MGJOIN_BIN="$dir/bin" OUT="$dir/bench" bash scripts/device-bench.sh \
  "--workload B --scale 0.0001 --gpus 0 --repeat 1 --columns 2 --output materialize")
grep -q "gather floor" <<< "$summary" || fail "device-bench.sh: no gather floor in: $summary"
diff_out=$(MGJOIN_BIN="$dir/bin" OUT="$dir/tests" MGJOIN_SUITES= MGJOIN_DIFF_CASES=20 MGJOIN_DIFF_GPUS=0 \
  MGJOIN_DIFF_SEED=5 bash scripts/device-tests.sh)
grep -q "differential: 20 cases, 0 mismatches" <<< "$diff_out" || fail "device-tests.sh: $diff_out"

# device-tests.sh's tiers on two stand-in suites that print what gtest prints: the tier and shard reach
# them, every test's time is read, the slowest come first, and a failing suite fails the run.
for s in alloc io; do
  cat > "$dir/bin/${s}_gpu_tests" <<EOF
#!/usr/bin/env bash
echo "[ tier     ] MGJOIN_TEST_TIER=\$MGJOIN_TEST_TIER shard \${GTEST_SHARD_INDEX:-}/\${GTEST_TOTAL_SHARDS:-}"
echo "[       OK ] ${s^}Suite.Slow (2500 ms)"
echo "[  FAILED  ] ${s^}Suite.Failing/g2 (1200 ms)"
echo "[       OK ] ${s^}Suite.Fast (3 ms)"
echo "[  PASSED  ] 2 tests."
echo "[  FAILED  ] ${s^}Suite.Failing/g2"
[ "$s" != io ]
EOF
  chmod +x "$dir/bin/${s}_gpu_tests"
done
status=0
tiers_out=$(MGJOIN_BIN="$dir/bin" OUT="$dir/tiers" MGJOIN_SUITES="alloc io" MGJOIN_BUILT_IN="$dir/built" \
  bash scripts/device-tests.sh full 2/3) || status=$?
[ "$status" = 1 ] || fail "device-tests.sh full 2/3 with a failing suite: exit status $status: $tiers_out"
grep -q "^alloc_gpu_tests rc=0" <<< "$tiers_out" && grep -q "^io_gpu_tests rc=1" <<< "$tiers_out" ||
  fail "device-tests.sh: no line per suite: $tiers_out"
grep -q "MGJOIN_TEST_TIER=full shard 1/3" "$dir/tiers/gpu-tests.log" || fail "device-tests.sh full 2/3: $(cat "$dir/tiers/gpu-tests.log")"
slowest=$(sed -n '/^== slowest tests/,/^== summary/p' <<< "$tiers_out")
[ "$(grep -c ' s ' <<< "$slowest")" = 6 ] && grep -q "^    2.5 s  alloc: AllocSuite.Slow" <<< "$slowest" &&
  [ "$(sed -n 2p <<< "$slowest" | grep -o 'Slow')" = Slow ] || fail "device-tests.sh's slowest tests: $tiers_out"
grep -q "2 \[  PASSED  \] 2 tests." <<< "$tiers_out" || fail "device-tests.sh's summary: $tiers_out"
quick_out=$(MGJOIN_BIN="$dir/bin" OUT="$dir/quick" MGJOIN_SUITES=alloc MGJOIN_BUILT_IN="$dir/built" bash scripts/device-tests.sh)
grep -q "MGJOIN_TEST_TIER=quick shard /" "$dir/quick/gpu-tests.log" && grep -q "== summary (quick)" <<< "$quick_out" ||
  fail "device-tests.sh (quick): $quick_out"
for bad in "full" "full 3/2" "full 0/2" "slow"; do
  status=0
  MGJOIN_BIN="$dir/bin" OUT="$dir/bad" MGJOIN_SUITES= bash scripts/device-tests.sh $bad > /dev/null 2>&1 || status=$?
  [ "$status" = 2 ] || fail "device-tests.sh $bad: exit status $status, not 2"
done

# With four GPUs (a stand-in nvidia-smi) copart and table run side by side, two GPUs each, with 60 s more
# than the suite timeout (the others keep it), and copart's ThreeOrMoreGpus tests run again on all GPUs.
mkdir -p "$dir/smi-path"
printf '#!/usr/bin/env bash\nfor i in 0 1 2 3; do echo "GPU $i: stand-in"; done\n' > "$dir/smi-path/nvidia-smi"
chmod +x "$dir/smi-path/nvidia-smi"
for s in alloc copart table; do
  cat > "$dir/bin/${s}_gpu_tests" <<'SUITE'
#!/usr/bin/env bash
echo "[ limit    ] $(tr '\0' ' ' < /proc/$PPID/cmdline)gpus=${CUDA_VISIBLE_DEVICES:-all} filter=${GTEST_FILTER:-}"
echo "[  PASSED  ] 1 test."
SUITE
  chmod +x "$dir/bin/${s}_gpu_tests"
done
side_out=$(env -u CUDA_VISIBLE_DEVICES PATH="$dir/smi-path:$PATH" MGJOIN_BIN="$dir/bin" OUT="$dir/side" \
  MGJOIN_SUITES="alloc copart table" MGJOIN_BUILT_IN="$dir/built" bash scripts/device-tests.sh) || fail "device-tests.sh, 4 GPUs: $side_out"
for want in "timeout 150 [^ ]*/alloc_gpu_tests gpus=all filter=$" "timeout 210 [^ ]*/copart_gpu_tests gpus=0,1 filter=$" \
            "timeout 210 [^ ]*/table_gpu_tests gpus=2,3 filter=$" "timeout 150 [^ ]*/copart_gpu_tests gpus=all filter=\\*ThreeOrMoreGpus\\*$"; do
  grep -q "^\\[ limit    \\] $want" "$dir/side/gpu-tests.log" || fail "device-tests.sh, 4 GPUs: no '$want' in: $(cat "$dir/side/gpu-tests.log")"
done

# device-sanitize.sh with a stand-in compute-sanitizer that prints its arguments and the suite's tier:
# MGJOIN_SAN_KERNELS=ours reaches racecheck and memcheck as the kernel filters, racecheck side by side gets
# its share of the cores, the default checks every kernel, and an unknown value is refused.
mkdir -p "$dir/san-path"
cat > "$dir/san-path/compute-sanitizer" <<'STUB'
#!/usr/bin/env bash
# Its report to stdout, or to --log-file's file (%p: its pid); STANDIN_SAN_ERRORS=1: two errors found.
log=/dev/stdout
for ((i = 1; i < $#; i++)); do [ "${!i}" != --log-file ] || { j=$(( i + 1 )); log=${!j//%p/$$}; }; done
# A target run as `… generate`: it never starts CUDA, and the report is the banner alone.
if [ "${*: -1}" = generate ]; then
  printf '%s\n' "========= COMPUTE-SANITIZER" "========= Target application terminated before first instrumented API call" > "$log"
  exit 0
fi
{
  echo "args: $*"
  echo "tier: ${MGJOIN_TEST_TIER:-}"
  if [ -n "${STANDIN_SAN_ERRORS:-}" ]; then echo "========= ERROR SUMMARY: 2 errors"; else
    echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"; fi
} > "$log"
[ -z "${STANDIN_SAN_ERRORS:-}" ] || exit 86
STUB
chmod +x "$dir/san-path/compute-sanitizer"
sanitize() {  # MGJOIN_SAN_KERNELS value, folder: racecheck and memcheck of e2e through device-sanitize.sh
  PATH="$dir/san-path:$PATH" MGJOIN_BIN="$dir/bin" OUT="$dir/$2" MGJOIN_SAN_LOGS="$dir/$2/logs" MGJOIN_BUILT_IN="$dir/built" \
    MGJOIN_SAN_KERNELS=$1 MGJOIN_SAN_TOOLS="racecheck memcheck" MGJOIN_SAN_SUITES=e2e MGJOIN_SAN_CASES=0 \
    MGJOIN_SAN_PARALLEL=2 MGJOIN_TEST_TIER=sanitize bash scripts/device-sanitize.sh
}
san_out=$(sanitize ours san-ours) || fail "device-sanitize.sh with a stand-in: $san_out"
for tool in racecheck memcheck; do
  log="$dir/san-ours/logs/sanitize-$tool-e2e.log"
  grep -q -- "--tool $tool .*--kernel-name kns=_ZN6mgjoin --kernel-name-exclude kns=_ZN3cub .*e2e_gpu_tests" "$log" &&
    grep -q "^tier: sanitize" "$log" || fail "device-sanitize.sh ($tool, our kernels): $(cat "$log")"
done
workers=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
grep -q -- "--racecheck-num-workers $workers " "$dir/san-ours/logs/sanitize-racecheck-e2e.log" ||
  fail "device-sanitize.sh: racecheck side by side without its share of workers: $(cat "$dir/san-ours/logs/sanitize-racecheck-e2e.log")"
sanitize all san-all > /dev/null || fail "device-sanitize.sh with a stand-in, every kernel"
if grep -q -- "--kernel-name" "$dir"/san-all/logs/*.log; then
  fail "device-sanitize.sh: a kernel filter by default: $(cat "$dir"/san-all/logs/*.log)"
fi
status=0
sanitize theirs san-bad > /dev/null 2>&1 || status=$?
[ "$status" = 2 ] || fail "device-sanitize.sh MGJOIN_SAN_KERNELS=theirs: exit status $status, not 2"

# device-sanitize.sh's cli route: the suite (a stand-in that starts two processes through
# MGJOIN_CLI_WRAPPER) runs plainly and each process under the tool, their reports summed in one line; a
# process with findings fails the run.
cat > "$dir/bin/cli_gpu_tests" <<'STUB'
#!/usr/bin/env bash
$MGJOIN_CLI_WRAPPER /bin/true --version
$MGJOIN_CLI_WRAPPER /bin/true --help
$MGJOIN_CLI_WRAPPER /bin/true generate
exit 0
STUB
chmod +x "$dir/bin/cli_gpu_tests"
cli_sanitize() {  # folder
  PATH="$dir/san-path:$PATH" MGJOIN_BIN="$dir/bin" OUT="$dir/$1" MGJOIN_SAN_LOGS="$dir/$1/logs" MGJOIN_BUILT_IN="$dir/built" \
    MGJOIN_SAN_TOOLS=memcheck MGJOIN_SAN_SUITES=cli MGJOIN_SAN_CASES=0 bash scripts/device-sanitize.sh
}
cli_out=$(cli_sanitize san-cli) || fail "device-sanitize.sh, cli: $cli_out"
grep -q "^memcheck cli rc=0 .*: 3 mgjoin processes (1 without CUDA), 0 with findings" <<< "$cli_out" || fail "device-sanitize.sh, cli: $cli_out"
[ "$(grep -l -- "--tool memcheck .*--require-cuda-init no --log-file .*child-%p.log /bin/true --" "$dir"/san-cli/logs/*.child-*.log | wc -l)" = 2 ] ||
  fail "device-sanitize.sh, cli: the processes' reports: $(cat "$dir"/san-cli/logs/*.child-*.log)"
status=0
cli_out=$(STANDIN_SAN_ERRORS=1 cli_sanitize san-cli-bad) || status=$?
[ "$status" != 0 ] && grep -q "^memcheck cli rc=86 .*: 3 mgjoin processes (1 without CUDA), 2 with findings or no summary: .*ERROR SUMMARY: 2 errors" <<< "$cli_out" ||
  fail "device-sanitize.sh, cli with findings: status $status: $cli_out"

# ranks-bench end to end on the CPU path: six medians (one process, two ranks over NCCL's choice and
# over MPI; count and materialized).
if [ -n "$mpiexec" ]; then
  out=$(PATH="$(dirname "$mpiexec"):$PATH" MGJOIN_BIN="$dir/bin" OUT="$dir/ranks" MGJOIN_PENDING_GPUS=0 \
    MGJOIN_PENDING_SCALE=0.0001 MGJOIN_PENDING_DATA="$dir/data" bash scripts/device-pending.sh ranks-bench)
  grep -q "ranks-bench: rc=0" <<< "$out" || fail "ranks-bench: $out"
  [ "$(grep -c "median" "$dir/ranks/ranks-bench.log")" = 6 ] || fail "ranks-bench: $(cat "$dir/ranks/ranks-bench.log")"
fi
echo "device_scripts_test: passed"
