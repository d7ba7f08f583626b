#!/usr/bin/env bash
# Runs the prebuilt GPU suites from a carried binary folder (default .devbin) on a GPU machine and
# writes one log to $OUT/gpu-tests.log; prints a summary line per suite.
set -uo pipefail
source "$(dirname "$0")/device-env.sh"  # cd to the root, NCCL_NVLS_ENABLE=0, $B (binaries), $OUT (logs)
# The CLI suites run the mgjoin binary at the build folder it was built in (MGJOIN_BUILT_IN).
built_in=${MGJOIN_BUILT_IN:-/work/main/build-lead}
if [ ! -e "$built_in/mgjoin" ]; then mkdir -p "$(dirname "$built_in")"; ln -sfn "$PWD/$B" "$built_in"; fi
failed=0  # the exit status: 1 when a suite or the differential harness failed
for t in ${MGJOIN_SUITES-alloc topology io join sort copart cli e2e table}; do  # set empty: none
  start=$(date +%s)
  timeout "${MGJOIN_SUITE_TIMEOUT:-240}" "$B/${t}_gpu_tests" ${MGJOIN_GTEST_ARGS:-} >> "$OUT/gpu-tests.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || failed=1
  echo "${t}_gpu_tests rc=$rc ($(( $(date +%s) - start )) s)"
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
echo "== summary"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu-tests.log" | sort | uniq -c
grep -E '^\[  FAILED  \]' "$OUT/gpu-tests.log" | sort -u | head -40
exit "$failed"
