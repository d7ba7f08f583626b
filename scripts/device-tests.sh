#!/usr/bin/env bash
# Runs the prebuilt GPU suites from a carried binary folder (default .devbin) on a GPU machine and
# writes one log to $OUT/gpu-tests.log; prints a summary line per suite.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
B=${MGJOIN_BIN:-.devbin}
OUT=${OUT:-out}
mkdir -p "$OUT"
# The CLI suites run the mgjoin binary at the build folder it was built in (MGJOIN_BUILT_IN).
built_in=${MGJOIN_BUILT_IN:-/work/main/build-lead}
if [ ! -e "$built_in/mgjoin" ]; then mkdir -p "$(dirname "$built_in")"; ln -sfn "$PWD/$B" "$built_in"; fi
for t in ${MGJOIN_SUITES:-alloc topology io join sort copart cli e2e table}; do
  start=$(date +%s)
  timeout "${MGJOIN_SUITE_TIMEOUT:-240}" "$B/${t}_gpu_tests" ${MGJOIN_GTEST_ARGS:-} >> "$OUT/gpu-tests.log" 2>&1
  echo "${t}_gpu_tests rc=$? ($(( $(date +%s) - start )) s)"
done
# The differential harness (tests/differential): MGJOIN_DIFF_CASES random cases on up to
# MGJOIN_DIFF_GPUS GPUs against the hash-join reference; its last line is the summary.
if [ -n "${MGJOIN_DIFF_CASES:-}" ]; then
  "$B/differential" --cases "$MGJOIN_DIFF_CASES" --gpus-max "${MGJOIN_DIFF_GPUS:-2}" ${MGJOIN_DIFF_ARGS:-} \
    > "$OUT/differential.log" 2>&1
  echo "differential rc=$?: $(tail -1 "$OUT/differential.log")"
fi
echo "== summary"; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu-tests.log" | sort | uniq -c
grep -E '^\[  FAILED  \]' "$OUT/gpu-tests.log" | sort -u | head -40
