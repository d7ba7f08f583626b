#!/usr/bin/env bash
# Runs the prebuilt GPU suites from a carried binary folder (default .devbin) on a GPU machine, in one of
# two tiers (docs/TESTING-TIERS.md), and writes their output to $OUT/gpu-tests.log; prints a line per
# suite, the ten slowest tests and a summary.
#
#   scripts/device-tests.sh             the quick tier (MGJOIN_TEST_TIER=quick): every suite and every
#                                       test, smaller data and thinner loops; one run of <= 6 minutes on
#                                       4 H100s
#   scripts/device-tests.sh full N/M    part N of M of the full tier (the suites' full sizes and grids):
#                                       every suite runs its N-th of M gtest shards; M = 3 gives parts of
#                                       about 5 minutes on 4 H100s (each must stay under a device call's 10)
#
# MGJOIN_SUITES (the suites, in order; set empty: none), MGJOIN_GTEST_ARGS (added to every suite's
# arguments, e.g. a --gtest_filter), MGJOIN_SUITE_TIMEOUT (seconds one suite may run; quick 150, full
# 300; copart 60 more, and table beside it), MGJOIN_RUN_BUDGET (seconds all suites together may run:
# each gets at most what is left; quick 360, full 570), MGJOIN_SIDE_BY_SIDE=0 (copart and table one after
# the other even on 4 GPUs).
set -uo pipefail
source "$(dirname "$0")/device-env.sh"  # cd to the root, NCCL_NVLS_ENABLE=0, $B (binaries), $OUT (logs)
tier=${1:-quick}
case "$tier" in
  quick) suite_timeout=150 budget=360 ;;
  full)
    if ! [[ "${2:-}" =~ ^([0-9]+)/([0-9]+)$ ]] || (( BASH_REMATCH[1] < 1 || BASH_REMATCH[1] > BASH_REMATCH[2] )); then
      echo "device-tests.sh full N/M: expected 1 <= N <= M, got '${2:-}'" >&2
      exit 2
    fi
    export GTEST_TOTAL_SHARDS=${BASH_REMATCH[2]} GTEST_SHARD_INDEX=$(( BASH_REMATCH[1] - 1 ))
    suite_timeout=300 budget=570 ;;
  *) echo "device-tests.sh: '$tier': expected quick or full N/M" >&2; exit 2 ;;
esac
export MGJOIN_TEST_TIER=$tier GTEST_PRINT_TIME=1  # per-test times: the slowest ten are listed at the end
suite_timeout=${MGJOIN_SUITE_TIMEOUT:-$suite_timeout}
deadline=$(( $(date +%s) + ${MGJOIN_RUN_BUDGET:-$budget} ))
suites=(${MGJOIN_SUITES-alloc topology io join sort copart cli e2e table})
# The CLI suites run the mgjoin binary at the build folder it was built in (MGJOIN_BUILT_IN).
built_in=${MGJOIN_BUILT_IN:-/work/main/build-lead}
if (( ${#suites[@]} )) && [ ! -e "$built_in/mgjoin" ]; then
  mkdir -p "$(dirname "$built_in")"
  ln -sfn "$(cd "$B" && pwd)" "$built_in"
fi
failed=0  # the exit status: 1 when a suite or the differential harness failed

run_suite() {  # suite[:log] [VAR=value...]: runs it (with those variables) within its share of the budget,
  local t=${1%%:*} log=${1#*:} start limit rc  # its output in $OUT/<log>.log (default: the suite's name)
  shift
  start=$(date +%s)
  limit=$(( deadline - start < suite_timeout ? deadline - start : suite_timeout ))
  if (( limit <= 0 )); then
    echo "${t}_gpu_tests not run: the run's budget is spent" | tee "$OUT/$log.log"
    return 1
  fi
  env "$@" timeout "$limit" "$B/${t}_gpu_tests" ${MGJOIN_GTEST_ARGS:-} > "$OUT/$log.log" 2>&1
  rc=$?
  echo "${t}_gpu_tests$([ "$log" = "$t" ] || echo " ($log)") rc=$rc ($(( $(date +%s) - start )) s$( (( rc == 124 )) && echo ", killed at $limit s"))"
  return "$rc"
}

listed() { [[ " ${suites[*]} " == *" $1 "* ]]; }
# copart and table join on at most 2 GPUs: with 4 GPUs present they run at once, each on two of them,
# with half the cores each (the other suites run alone, on every GPU).
side_by_side=
if [[ "${MGJOIN_SIDE_BY_SIDE:-1}" != 0 && -z "${CUDA_VISIBLE_DEVICES:-}" ]] && listed copart && listed table &&
   (( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 4 )); then
  side_by_side=1
fi
half_cores=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
logs=()  # runs of a suite beyond its own, by log name
for t in "${suites[@]}"; do
  if [[ -n "$side_by_side" && "$t" == table ]]; then continue; fi  # ran beside copart
  if [[ -n "$side_by_side" && "$t" == copart ]]; then
    # The two longest suites, on half the machine each, get 60 s more than one suite alone: on 4 H200s
    # copart took 134 s of its 150 in s24 and was killed at 150 s in its last test in s25 (call 3).
    longer=$(( suite_timeout + 60 ))
    suite_timeout=$longer run_suite copart CUDA_VISIBLE_DEVICES=0,1 OMP_NUM_THREADS=$half_cores & copart=$!
    suite_timeout=$longer run_suite table CUDA_VISIBLE_DEVICES=2,3 OMP_NUM_THREADS=$half_cores & table=$!
    wait "$copart" || failed=1
    wait "$table" || failed=1
    # On two GPUs a test that needs three or more skips: those (named …ThreeOrMoreGpus…) run again on all.
    run_suite copart:copart-all-gpus GTEST_FILTER='*ThreeOrMoreGpus*' || failed=1
    logs+=(copart-all-gpus)
  elif [[ "$t" == copart ]]; then
    # Alone the longest suite gets the same 60 s more: on 2 H200s it took 140-158 s of its 150 in s27 and
    # was killed at 150 s once. On 4 GPUs or more (table not listed beside it) its tests loop over more
    # GPU counts: 120 s more (4 H200s, s28: killed at 210 s in its last test, the 48 before it passed).
    more=60
    (( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 4 )) && more=120
    suite_timeout=$(( suite_timeout + more )) run_suite copart || failed=1
  else
    run_suite "$t" || failed=1
  fi
done
# One log of every suite, in order (added to what an earlier run in $OUT wrote); the per-suite logs go.
for t in "${suites[@]}" "${logs[@]}"; do
  [ -f "$OUT/$t.log" ] || continue
  echo "=== ${t}_gpu_tests" >> "$OUT/gpu-tests.log"
  cat "$OUT/$t.log" >> "$OUT/gpu-tests.log"
  # "[       OK ] Suite.Test (1234 ms)" -> "1234 t: Suite.Test" (failed tests too)
  sed -nE "s/^\[ +(OK|FAILED) +\] (.+) \(([0-9]+) ms\)$/\3 $t: \2/p" "$OUT/$t.log" >> "$OUT/gpu-tests.times"
  rm -f "$OUT/$t.log"
done

# The differential harness (tests/differential): MGJOIN_DIFF_CASES random cases on up to
# MGJOIN_DIFF_GPUS GPUs against the hash-join reference; its last line is the summary. With
# MGJOIN_DIFF_SHARDS=N (default 1) N processes share one seed's cases side by side (--shard i/N), each
# with MGJOIN_DIFF_LIMIT_MIB (default 65536 / N) of GPU memory and nproc / N OpenMP threads.
if [ -n "${MGJOIN_DIFF_CASES:-}" ]; then
  shards=${MGJOIN_DIFF_SHARDS:-1}
  seed=${MGJOIN_DIFF_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}
  start=$(date +%s)
  for ((i = 0; i < shards; i++)); do
    shard_args=()
    [ "$shards" -eq 1 ] || shard_args=(--shard "$i/$shards" --gpu-memory-limit-mib "${MGJOIN_DIFF_LIMIT_MIB:-$(( 65536 / shards ))}")
    OMP_NUM_THREADS=$(( $(nproc) / shards > 0 ? $(nproc) / shards : 1 )) \
      "$B/differential" --cases "$MGJOIN_DIFF_CASES" --seed "$seed" --gpus-max "${MGJOIN_DIFF_GPUS:-2}" \
      "${shard_args[@]}" ${MGJOIN_DIFF_ARGS:-} > "$OUT/differential-$i.log" 2>&1 &
  done
  rc=0
  for ((i = 0; i < shards; i++)); do wait -n || rc=1; done
  [ "$rc" -eq 0 ] || failed=1
  cat "$OUT"/differential-*.log > "$OUT/differential.log"; rm -f "$OUT"/differential-*.log
  echo "differential rc=$rc in $(( $(date +%s) - start )) s:"; grep -E '^(differential: [0-9]+ cases|MISMATCH)' "$OUT/differential.log"
fi
[ -f "$OUT/gpu-tests.log" ] || exit "$failed"
if [ -s "$OUT/gpu-tests.times" ]; then
  echo "== slowest tests"
  sort -rn "$OUT/gpu-tests.times" | head -10 | awk '{ ms = $1; sub(/^[0-9]+ /, ""); printf "%7.1f s  %s\n", ms / 1000, $0 }'
fi
rm -f "$OUT/gpu-tests.times"
echo "== summary ($tier${GTEST_TOTAL_SHARDS:+ part $(( GTEST_SHARD_INDEX + 1 ))/$GTEST_TOTAL_SHARDS})"
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu-tests.log" | sort | uniq -c
grep -E '^\[  FAILED  \]' "$OUT/gpu-tests.log" | sort -u | head -40
exit "$failed"
