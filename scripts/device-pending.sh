#!/usr/bin/env bash
# The GPU runs the open issues still wait for, in groups that each fit one device call (600 s), so that a
# session with device time spends it on runs, not on working out commands. Run on a GPU machine from the
# repository root with the binaries built here (`scripts/pack-devbin.sh`, carried as .devbin); logs and
# JSON go to $OUT; the last lines printed are a summary per step.
#
#   scripts/device-pending.sh GROUP...     (several groups run one after the other)
#
#   suites        every GPU suite, then 10^4 differential cases in 4 shards on up to 2 GPUs
#                 (issues 18-22 at g = 2 on nvidia-h200-x2; ~600 s there: alone in its call)
#   tables-bench  issue 19: `mgjoin tune` (the gather plan's rates), then B 2.5·10^8 with 4 payload columns
#                 a side gathered late on the CPU, on the GPUs and where the plan says, the gather floor
#                 beside each; one payload column late (CPU, GPUs) and carried; join() beside (no slower)
#   gather-crossover  issue 19: `mgjoin tune`, then 4 payload columns a side of 10^4 to 10^7 rows gathered
#                 on the CPU, the GPUs and where the gather plan says (docs/PERFORMANCE-HISTORY.md, session 14)
#   ooc-bench     issue 20: B 10^9 × 10^9 with --gpu-memory-limit 8G against the same join in core, the
#                 paper flow beside (nvidia-h200-x2: within 1.8x of in core), count and materialized; the
#                 bucketed cases (8G materialized, 4G count) again with MGJOIN_BUCKET_RESIDENT=auto
#   ooc-h100      issue 20 on nvidia-h100-x1: B scale 2 counted and materialized, the paper flow beside,
#                 workload A with R resident and S 4x the GPU memory
#   ranks-bench   issues 23 and 39: MGJOIN_PENDING_RANKS (default 2) ranks (mpirun), each its share of
#                 MGJOIN_PENDING_GPUS, against one process on all of them, the same files, count and
#                 materialized (within 1.15x), the rows over NCCL and over MPI
#   ranks-tests   issue 23: the MPI test programs with 2 ranks, the rows over NCCL (made by the engine and
#                 the program's own communicator) and the joins on the ranks' GPUs; the CLI with 2 ranks on
#                 the GPUs, and a rank killed just before the NCCL exchange
#   python        issue 22 at g = 2: the package built there, its tests, compare.py with 1 and 4 columns
#                 (carry .whl and .deps: duckdb's wheel, polars-site.tar.xz, Debian's nlohmann-json3-dev)
#   tpch          issue 42: the package built there as for python, then python/bench/tpch.py at TPC-H scale
#                 factor MGJOIN_PENDING_TPCH_SF (default 10; data in MGJOIN_PENDING_TPCH_DATA, default
#                 /tmp/mgjoin-tpch/sf<SF>, reused), MGJOIN_PENDING_TPCH_REPEAT runs (3) on every GPU, more
#                 options in MGJOIN_PENDING_TPCH_ARGS (at SF 100: --generate-only first, then one system a call)
#                 (carry .whl with tpchgen-cli's wheel too: pip download --no-deps -d .whl tpchgen-cli)
#   files-bench   issue 41 (item 6): scripts/bench-files.py, `mgjoin join` on .npy files of B counted and
#                 materialized against the read, write, PCIe and start-up floors of the same run, at scale 1
#                 on every GPU (32 GB in, 24 GB out: the disk needs ~60 GB) and at scale 0.25 on one GPU;
#                 JSON in $OUT/files-bench-*.json
#   staging-bench issue 41: scripts/bench-files.py at scale 0.25 with pageable inputs staged and registered
#                 (MGJOIN_STAGE_INPUTS=1, 0) at g = 1, 2, 4 (MGJOIN_PENDING_STAGING_GPUS; those present):
#                 ~90 s a run, so g = 4 alone on x4 fits one call (steps staging-bench-g<G>-<1|0>)
#   stream-bench  issue 41: the same with the output streamed into its .npy files during the join and written
#                 after it (MGJOIN_STREAM_OUTPUT=1, 0) at g = 4 (MGJOIN_PENDING_STREAM_GPUS; those present)
#   sanitize-cli  issue 21: the cli suite alone (its mgjoin processes take most of the GPU) under each of
#                 the four tools, at most 140 s each
#   racecheck-copart, racecheck-e2e, racecheck-table
#                 issue 21: racecheck of one whole suite (up to 580 s: one per call), its sanitize tier,
#                 only mgjoin's kernels checked (as x4-sanitize's)
#   x4-tests      issue 39 on 4 GPUs, one call: the quick tier of every suite; the Python package built
#                 meanwhile (carry .deps) and its tests on all GPUs; the MPI programs and the CLI with
#                 MGJOIN_PENDING_RANKS (default 4) ranks over NCCL
#   x4-sanitize   issue 39: memcheck of cli on two GPUs, then racecheck of copart, e2e and table in
#                 MGJOIN_SAN_X4_SHARDS (4) gtest shards each, side by side, each run at most MGJOIN_SAN_TIMEOUT
#                 (500) s; racecheck runs the sanitize tier (MGJOIN_TEST_TIER=sanitize: a few thousand rows
#                 where size adds nothing) and checks only mgjoin's kernels (MGJOIN_SAN_KERNELS=ours: CUB's
#                 and NCCL's run uninstrumented), both in scripts/device-sanitize.sh's header; each part up
#                 to MGJOIN_SAN_TIMEOUT, so the two may take two calls:
#   x4-memcheck-cli, x4-racecheck   x4-sanitize's two parts alone (x4-racecheck: one call, <= ~8 min)
#   x4-python     issue 39 (item 5): the Python package built there (carry .deps and .whl with duckdb's
#                 wheel), then its GPU cases (MGJOIN_TEST_PLACES=gpus) at g = 1, 2 and 4, one run after the
#                 other and nothing beside them (~150 s each on x4): side by side with each other or a
#                 sanitizer, their engines' OpenMP threads oversubscribed the cores and no run ended in 350 s (s24)
#   x4-bench      issue 39's 4-GPU table: g = 1..4 of B 10^9 count, A 2*10^8 x 2*10^9, Zipf 1, B 2.5*10^8
#                 materialized; B 10^9 materialized in core and at 8G (g = 2, 4); B scale 8 count (g = 4);
#                 4 ranks against one process (NCCL only); with MGJOIN_BIN_BEFORE (a binary folder of an
#                 earlier commit) B 10^9 count and B 2.5*10^8 materialized on g = 4 by both, one after the other
#
# MGJOIN_PENDING_GPUS (default 2) is the GPU count of the bench groups; 0 runs them on the CPU path, and
# MGJOIN_PENDING_SCALE (default 0.25) sizes ranks-bench: with both, the groups' scripting is tried on a
# machine without GPUs. MGJOIN_PENDING_DRY=1 prints the commands instead of running them.
set -uo pipefail
source "$(dirname "$0")/device-env.sh"  # cd to the root, NCCL_NVLS_ENABLE=0, $B (binaries), $OUT (logs)
summary=()

step() {  # name, then the command; its output goes to $OUT/<name>.log
  local name=$1 start rc
  shift
  if [ -n "${MGJOIN_PENDING_DRY:-}" ]; then
    if [ "$1" = bench ]; then
      shift
      printf "[$name] mgjoin bench %s\n" "$@"  # one line per case
    else
      echo "[$name] $*"
    fi
    return 0
  fi
  start=$(date +%s)
  "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  summary+=("$name: rc=$rc in $(( $(date +%s) - start )) s; $(tail -n 1 "$OUT/$name.log")")
}

bench() {  # the bench cases given, one per argument, through scripts/device-bench.sh
  MGJOIN_CASE_TIMEOUT=${MGJOIN_CASE_TIMEOUT:-300} bash scripts/device-bench.sh "$@"
}

group_suites() {
  step suites env MGJOIN_SUITE_TIMEOUT=300 bash scripts/device-tests.sh
  step differential env MGJOIN_SUITES= MGJOIN_DIFF_CASES=10000 MGJOIN_DIFF_SHARDS=4 MGJOIN_DIFF_GPUS=2 \
    bash scripts/device-tests.sh
}

group_tables_bench() {
  local g=${MGJOIN_PENDING_GPUS:-2} common="--workload B --scale 0.25 --output materialize --repeat 3"
  # The machine's rates first (PCIe, and the CPU's random gather): the gather plan's auto choice reads them.
  [ "$g" -eq 0 ] || step tune "$B/mgjoin" tune --join-scale 0
  step tables-bench bench \
    "$common --gpus $g --columns 4 --materialization late --gather-on cpu" \
    "$common --gpus $g --columns 4 --materialization late --gather-on gpus" \
    "$common --gpus $g --columns 4 --materialization late" \
    "$common --gpus $g --columns 1 --tables --materialization late --gather-on cpu" \
    "$common --gpus $g --columns 1 --tables --materialization late --gather-on gpus" \
    "$common --gpus $g --columns 1 --tables --materialization carry" \
    "$common --gpus $g"
}

group_gather_crossover() {
  local g=${MGJOIN_PENDING_GPUS:-2} cases=() scale on
  [ "$g" -eq 0 ] || step tune "$B/mgjoin" tune --join-scale 0
  for scale in 0.00001 0.0001 0.001 0.01; do
    for on in cpu gpus auto; do
      cases+=("--workload B --scale $scale --output materialize --repeat 5 --gpus $g --columns 4 --materialization late --gather-on $on")
    done
  done
  step gather-crossover bench "${cases[@]}"
}

group_ooc_bench() {
  local g=${MGJOIN_PENDING_GPUS:-2} common="--workload B --scale 1 --repeat 3"
  MGJOIN_PINNED_CACHE_BYTES=64G step ooc-bench bench \
    "$common --gpus $g" \
    "$common --gpus $g --gpu-memory-limit 8G" \
    "$common --gpus $g --gpu-memory-limit 8G --strategy paper" \
    "$common --gpus $g --output materialize" \
    "$common --gpus $g --gpu-memory-limit 8G --output materialize" \
    "$common --gpus $g --gpu-memory-limit 4G"
  # The bucketed cases again with resident groups (hybrid, off by default): what they gain or cost.
  MGJOIN_BUCKET_RESIDENT=auto MGJOIN_PINNED_CACHE_BYTES=64G step ooc-bench-hybrid bench \
    "$common --gpus $g --gpu-memory-limit 8G --output materialize" \
    "$common --gpus $g --gpu-memory-limit 4G"
}

# Issue 20's targets on one H100 (nvidia-h100-x1: 80 GB GPU, 125 GB of RAM): B scale 2 (64 GB in) counted
# (<= 3.5 s and <= 1.3x the chosen flow's floor) and materialized (<= the count + 1.25x the output's D2H
# floor), the paper flow beside (one run: its merge needs most of the RAM), and workload A with S >= 4x the
# GPU memory and R resident (<= 1.25x S's H2D floor). The pinned cache keeps the inputs and the 48 GB
# output pinned between runs, as a program joining repeatedly would.
group_ooc_h100() {
  local g=${MGJOIN_PENDING_GPUS:-1} scale=${MGJOIN_PENDING_OOC_SCALE:-2}
  MGJOIN_PINNED_CACHE_BYTES=64G step ooc-h100 bench \
    "--workload B --scale $scale --gpus $g --repeat 3" \
    "--workload B --scale $scale --gpus $g --repeat 3 --output materialize" \
    "--workload B --scale $scale --gpus $g --repeat 1 --warmup 0 --strategy paper" \
    "--workload A --scale $(( scale * 2 )) --gpus $g --repeat 3 --gpu-memory-limit 4G"
}

# One join of the same files, a warm-up then three runs: the median of its --json "seconds" (the join
# alone, without reading the files: one process's join_tables, or the ranks' collective join).
ranks_case() {
  local label=$1 runs=() i
  shift
  for i in 0 1 2 3; do
    "$@" --json > "$OUT/ranks-$label-$i.json" 2>> "$OUT/ranks-bench.err" || { echo "$label: failed (run $i)"; return 1; }
    [ "$i" -eq 0 ] || runs+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$OUT/ranks-$label-$i.json")")
  done
  echo "$label: median $(printf '%s\n' "${runs[@]}" | sort -g | sed -n 2p) s of ${runs[*]}"
}

ranks_cases() {  # data directory
  local data=$1 g=${MGJOIN_PENDING_GPUS:-2} n=${MGJOIN_PENDING_RANKS:-2}
  local files=(--r-key "$data/r_key.npy" --r-payload "$data/r_payload.npy" --s-key "$data/s_key.npy"
               --s-payload "$data/s_payload.npy")
  # Open MPI as root in a container; every rank gets the NVLink multicast guard (the machine's rule).
  # Open MPI binds each rank to one core by default: each rank gets its share of the cores instead.
  local mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=$(( $(nproc) / n ))
             OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun -np "$n" --bind-to none -x NCCL_NVLS_ENABLE
             -x OMP_NUM_THREADS)
  local per_rank=$(( g > 0 ? g / n : 0 ))  # each rank its share of the GPUs (0: the CPU path)
  # n ranks with the rows over NCCL (auto, where the ranks have GPUs) and over MPI's host memory.
  ranks_case one-process-count "$B/mgjoin" join "${files[@]}" --gpus "$g" --count
  ranks_case "$n-ranks-count" "${mpi[@]}" "$B/mgjoin" join "${files[@]}" --gpus "$per_rank" --count
  [ "${MGJOIN_PENDING_RANKS_MPI:-1}" = 0 ] ||
    ranks_case "$n-ranks-count-mpi" "${mpi[@]}" "$B/mgjoin" join "${files[@]}" --gpus "$per_rank" --count --rank-exchange mpi
  ranks_case one-process-materialized "$B/mgjoin" join "${files[@]}" --gpus "$g" --out-dir "$data/out1" --overwrite
  ranks_case "$n-ranks-materialized" "${mpi[@]}" "$B/mgjoin" join "${files[@]}" --gpus "$per_rank" \
    --out-dir "$data/out2" --overwrite
  [ "${MGJOIN_PENDING_RANKS_MPI:-1}" = 0 ] ||
    ranks_case "$n-ranks-materialized-mpi" "${mpi[@]}" "$B/mgjoin" join "${files[@]}" --gpus "$per_rank" \
      --out-dir "$data/out3" --overwrite --rank-exchange mpi
}

group_ranks_bench() {
  local data=${MGJOIN_PENDING_DATA:-/tmp/mgjoin-ranks}
  step ranks-generate "$B/mgjoin" generate --workload B --scale "${MGJOIN_PENDING_SCALE:-0.25}" --out-dir "$data" --overwrite
  step ranks-bench ranks_cases "$data"
}

group_ranks_tests() {
  local mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
             OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun -np 2 -x NCCL_NVLS_ENABLE -x MGJOIN_TEST_RANK_EXCHANGE)
  local x p
  for x in nccl nccl-external; do
    for p in dist_join_mpi dist_tables_mpi; do
      step "ranks-tests-$p-$x" env MGJOIN_TEST_RANK_EXCHANGE=$x timeout 280 "${mpi[@]}" "$B/$p"
    done
  done
  step ranks-tests-cli timeout 280 bash tests/dist/cli_ranks_gpus_test.sh "$B/mgjoin"
}

python_package() {  # target folder, then more wheels of .whl to install there (globs)
  local target=$1
  shift
  step python-build python3 -m pip install --no-build-isolation --no-deps --target "$target" \
    -Cbuild-dir=build/python -Ccmake.define.CMAKE_PREFIX_PATH="$PWD/.deps/usr" .
  step python-competitors bash -c "python3 -m pip install --no-deps --target $target .whl/duckdb-*.whl $* &&
    tar -xJf .whl/polars-site.tar.xz -C $target"
}

group_python() {
  local target=/tmp/mgjoin-python
  python_package "$target"
  step python-tests env PYTHONPATH="$target" python3 -m pytest -q -p no:cacheprovider python/tests
  step python-compare env PYTHONPATH="$target" python3 python/bench/compare.py --scale 0.1 --repeat 3 \
    --json "$OUT/compare-1.json"
  step python-compare-4-columns env PYTHONPATH="$target" python3 python/bench/compare.py --scale 0.1 --repeat 3 \
    --columns 4 --engines mgjoin,duckdb --json "$OUT/compare-4.json"
}

# Issue 42: python/bench/tpch.py at scale factor MGJOIN_PENDING_TPCH_SF on every GPU (MGJOIN_PENDING_GPUS
# when set), the data generated by tpchgen-cli's wheel (carried in .whl) into MGJOIN_PENDING_TPCH_DATA and
# reused there while the machine is held; MGJOIN_PENDING_TPCH_ARGS: more options of tpch.py.
group_tpch() {
  local target=/tmp/mgjoin-python sf=${MGJOIN_PENDING_TPCH_SF:-10}
  python_package "$target" ".whl/tpchgen_cli-*.whl"
  step tpch env PATH="$target/bin:$PATH" PYTHONPATH="$target" python3 python/bench/tpch.py --scale "$sf" \
    --repeat "${MGJOIN_PENDING_TPCH_REPEAT:-3}" --data "${MGJOIN_PENDING_TPCH_DATA:-/tmp/mgjoin-tpch/sf$sf}" \
    ${MGJOIN_PENDING_GPUS:+--gpus "$MGJOIN_PENDING_GPUS"} ${MGJOIN_PENDING_TPCH_ARGS:-} --json "$OUT/tpch-sf$sf.json"
}

# Issue 41's benchmark of what users run: the CLI's wall time on files against floors measured beside it.
# MGJOIN_PENDING_GPUS (default: all) is the first run's GPU count; the second runs on one (0 stays 0).
# Not timed on a GPU machine yet: the floors write and read the files 4 times each (O_DIRECT and fsync on
# the disk); if the two steps take longer than one call (600 s), MGJOIN_PENDING_FILES_ARGS="--repeat 1".
group_files_bench() {
  local g=${MGJOIN_PENDING_GPUS:--1}
  local files=(python3 scripts/bench-files.py --mgjoin "$B/mgjoin" --io-floor "$B/bench_io_floor" --repeat 3
               ${MGJOIN_PENDING_FILES_ARGS:-})
  step files-bench "${files[@]}" --scale 1 --gpus "$g" --json-out "$OUT/files-bench-all.json"
  step files-bench-1gpu "${files[@]}" --scale 0.25 --gpus $(( g == 0 ? 0 : 1 )) --json-out "$OUT/files-bench-1gpu.json"
}

# Issue 41: the CLI on B 2.5·10^8 .npy (page cache warm) with pageable inputs staged (the default) and
# registered (MGJOIN_STAGE_INPUTS=0), one after the other on the same data, at each GPU count of
# MGJOIN_PENDING_STAGING_GPUS (default "1 2 4", those present).
# bench-files.py at scale 0.25 with an environment variable on (1) and off (0), at each GPU count of `gpus`
# present: bench_files_ab NAME VARIABLE "GPU COUNTS" (~100 s a run: g = 4's two runs alone fit one call).
bench_files_ab() {
  local name=$1 variable=$2 gpus=$3 present g v data=/tmp/mgjoin-files-ab
  present=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ -z "${MGJOIN_PENDING_DRY:-}" ] || present=4  # a dry run lists every step
  for g in $gpus; do
    (( g <= present )) || continue
    for v in 1 0; do
      step "$name-g$g-$v" env "$variable=$v" python3 scripts/bench-files.py \
        --mgjoin "$B/mgjoin" --io-floor "$B/bench_io_floor" --repeat 3 --scale 0.25 --gpus "$g" --data "$data" \
        --json-out "$OUT/$name-g$g-$v.json"
    done
  done
}

group_staging_bench() { bench_files_ab staging-bench MGJOIN_STAGE_INPUTS "${MGJOIN_PENDING_STAGING_GPUS:-1 2 4}"; }
group_stream_bench() { bench_files_ab stream-bench MGJOIN_STREAM_OUTPUT "${MGJOIN_PENDING_STREAM_GPUS:-4}"; }

group_sanitize_cli() {
  local tool
  for tool in memcheck racecheck synccheck initcheck; do
    step "sanitize-cli-$tool" env MGJOIN_SAN_TOOLS=$tool MGJOIN_SAN_SUITES=cli MGJOIN_SAN_CASES=0 \
      MGJOIN_SAN_TIMEOUT=140 bash scripts/device-sanitize.sh
  done
}

group_x4_tests() {
  local target=/tmp/mgjoin-python n=${MGJOIN_PENDING_RANKS:-4}
  # The package builds on a quarter of the CPUs while the suites run on the GPUs (its own build folder).
  local build_package=(env CMAKE_BUILD_PARALLEL_LEVEL=$(( $(nproc) / 4 > 0 ? $(nproc) / 4 : 1 )) python3 -m pip install -q
                       --no-build-isolation --no-deps --target "$target" -Cbuild-dir=build/python
                       -Ccmake.define.CMAKE_PREFIX_PATH="$PWD/.deps/usr" .)
  local build=
  if [ -n "${MGJOIN_PENDING_DRY:-}" ]; then
    echo "[python-build] (beside the suites) ${build_package[*]}"
  else
    ("${build_package[@]}" > "$OUT/python-build.log" 2>&1; echo "rc=$?" >> "$OUT/python-build.log") &
    build=$!
  fi
  step suites bash scripts/device-tests.sh
  if [ -z "${MGJOIN_PENDING_DRY:-}" ]; then
    wait "$build"
    summary+=("python-build: $(tail -n 1 "$OUT/python-build.log")")
  fi
  step python-tests env PYTHONPATH="$target" python3 -m pytest -q -p no:cacheprovider python/tests
  local mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
             mpirun -np "$n" -x NCCL_NVLS_ENABLE -x MGJOIN_TEST_RANK_EXCHANGE)
  local p
  for p in dist_join_mpi dist_tables_mpi; do
    step "ranks-tests-$p-$n" env MGJOIN_TEST_RANK_EXCHANGE=nccl timeout 200 "${mpi[@]}" "$B/$p"
  done
  step ranks-tests-cli timeout 200 bash tests/dist/cli_ranks_gpus_test.sh "$B/mgjoin"
}

# The racecheck runs' settings: the suites only (no differential cases), the sanitize tier, our kernels only.
racecheck_env=(MGJOIN_SAN_TOOLS=racecheck MGJOIN_SAN_CASES=0 MGJOIN_TEST_TIER=sanitize MGJOIN_SAN_KERNELS=ours)

# Memcheck of the cli suite on two GPUs, alone (beside the racecheck runs its children found no GPU memory
# to start in: s22), in the sanitize tier: on 2 of 4 H200s (s24) the quick tier's CliTest.GpuJoinMatchesCpuJoin
# (10^6 rows a side, three joins under memcheck) outlasted 370 s, and at the sanitize tier's 10^5 rows 486 s
# (s25), both with the suite under the tool tracking its processes; device-sanitize.sh now puts each mgjoin
# process under the tool itself (MGJOIN_CLI_WRAPPER) and runs the suite plainly.
group_x4_memcheck_cli() {
  step x4-memcheck-cli env CUDA_VISIBLE_DEVICES=0,1 MGJOIN_TEST_TIER=sanitize MGJOIN_SAN_TOOLS=memcheck MGJOIN_SAN_SUITES=cli \
    MGJOIN_SAN_CASES=0 MGJOIN_SAN_TIMEOUT="${MGJOIN_SAN_TIMEOUT:-500}" bash scripts/device-sanitize.sh
}

# Racecheck of copart, e2e and table in gtest shards side by side, each run's engines
# MGJOIN_TEST_GPU_MEMORY_MIB of a GPU. On 2 H200s (s22) most shards of the quick tier did not end in 500 s
# (BucketedFlow.RandomKeys alone outlasted it; CUB's radix sort never ended): racecheck now leaves CUB's
# kernels out and runs the sanitize tier's smaller inputs (racecheck_env).
group_x4_racecheck() {
  local shards=${MGJOIN_SAN_X4_SHARDS:-4}
  step x4-racecheck env "${racecheck_env[@]}" MGJOIN_SAN_PARALLEL=$(( 3 * shards )) MGJOIN_SAN_SHARDS="$shards" \
    MGJOIN_TEST_GPU_MEMORY_MIB=4096 MGJOIN_SAN_SUITES="copart e2e table" MGJOIN_SAN_TIMEOUT="${MGJOIN_SAN_TIMEOUT:-500}" \
    bash scripts/device-sanitize.sh
}

group_x4_python() {
  local target=/tmp/mgjoin-python g
  step python-build python3 -m pip install --no-build-isolation --no-deps --target "$target" \
    -Cbuild-dir=build/python -Ccmake.define.CMAKE_PREFIX_PATH="$PWD/.deps/usr" .
  step python-duckdb python3 -m pip install --no-deps --target "$target" .whl/duckdb-*.whl
  for g in 1 2 4; do
    step "python-gpus-g$g" env MGJOIN_TEST_PLACES=gpus MGJOIN_TEST_GPUS="$g" PYTHONPATH="$target" \
      python3 -m pytest -q -p no:cacheprovider --durations=5 python/tests
  done
}

group_x4_bench() {
  local g cases=()
  for g in 1 2 3 4; do
    cases+=("--workload B --scale 1 --gpus $g --repeat 3"
            "--workload A --scale 2 --gpus $g --repeat 3"
            "--workload B --scale 1 --zipf 1 --gpus $g --repeat 3"
            "--workload B --scale 0.25 --gpus $g --repeat 3 --output materialize")
  done
  for g in 2 4; do
    cases+=("--workload B --scale 1 --gpus $g --repeat 3 --output materialize"
            "--workload B --scale 1 --gpus $g --repeat 5 --output materialize --gpu-memory-limit 8G")
  done
  cases+=("--workload B --scale 8 --gpus 4 --repeat 3")
  MGJOIN_PINNED_CACHE_BYTES=128G step x4-bench bench "${cases[@]}"
  MGJOIN_PENDING_GPUS=4 MGJOIN_PENDING_RANKS=4 MGJOIN_PENDING_RANKS_MPI=0 group_ranks_bench
  if [ -n "${MGJOIN_BIN_BEFORE:-}" ]; then
    local before=("--workload B --scale 1 --gpus 4 --repeat 5" "--workload B --scale 0.25 --gpus 4 --repeat 5 --output materialize")
    MGJOIN_BIN=$MGJOIN_BIN_BEFORE step x4-bench-before bench "${before[@]}"
    step x4-bench-after bench "${before[@]}"
  fi
}

group_racecheck() {  # suite
  step "racecheck-$1" env "${racecheck_env[@]}" MGJOIN_SAN_SUITES="$1" MGJOIN_SAN_TIMEOUT=580 bash scripts/device-sanitize.sh
}

[ $# -gt 0 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2; }  # the comment on top
for group in "$@"; do
  case $group in
    suites) group_suites ;;
    tables-bench) group_tables_bench ;;
    gather-crossover) group_gather_crossover ;;
    ooc-bench) group_ooc_bench ;;
    ooc-h100) group_ooc_h100 ;;
    ranks-bench) group_ranks_bench ;;
    ranks-tests) group_ranks_tests ;;
    python) group_python ;;
    tpch) group_tpch ;;
    files-bench) group_files_bench ;;
    staging-bench) group_staging_bench ;;
    stream-bench) group_stream_bench ;;
    sanitize-cli) group_sanitize_cli ;;
    racecheck-copart | racecheck-e2e | racecheck-table) group_racecheck "${group#racecheck-}" ;;
    x4-tests) group_x4_tests ;;
    x4-sanitize) group_x4_memcheck_cli; group_x4_racecheck ;;
    x4-memcheck-cli) group_x4_memcheck_cli ;;
    x4-racecheck) group_x4_racecheck ;;
    x4-python) group_x4_python ;;
    x4-bench) group_x4_bench ;;
    *) echo "device-pending.sh: $group: unknown group (suites, tables-bench, gather-crossover, ooc-bench, ooc-h100, ranks-bench, ranks-tests, python, tpch, files-bench, staging-bench, stream-bench," \
         "sanitize-cli, racecheck-copart, racecheck-e2e, racecheck-table, x4-tests, x4-sanitize, x4-memcheck-cli, x4-racecheck," \
         "x4-bench)" >&2
       exit 2 ;;
  esac
done
[ ${#summary[@]} -eq 0 ] || { echo "== summary"; printf '%s\n' "${summary[@]}"; }
