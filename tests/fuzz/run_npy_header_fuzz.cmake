# ctest -P script: builds the libFuzzer target for the .npy header parser with clang++ (the project's
# compiler is g++, which has no libFuzzer), writes its seed corpus and fuzzes for MAX_TIME seconds.
# Prints NPY_FUZZ_SKIPPED (the test's skip pattern) where no clang++ can link a fuzzer.
#   cmake -DSRC=<repo> -DWORK=<dir> -DCUDA_INCLUDE=<dir> -DMAX_TIME=<s> -P run_npy_header_fuzz.cmake
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)

# A toolchain without libFuzzer (no clang, or clang without its runtime) skips; a target that does
# not build with one that has it fails.
find_program(CLANGXX NAMES clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14)
if(CLANGXX)
  file(WRITE ${WORK}/probe.cpp "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
  execute_process(COMMAND ${CLANGXX} -fsanitize=fuzzer ${WORK}/probe.cpp -o ${WORK}/probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
endif()
if(NOT CLANGXX OR NOT probe_rc EQUAL 0)
  message("NPY_FUZZ_SKIPPED: no clang++ with -fsanitize=fuzzer (scripts/install-deps.sh installs clang)")
  return()
endif()

run("building the fuzzer with ${CLANGXX}" ${CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -I${SRC} -I${SRC}/core/include -I${SRC}/engine/include -isystem ${CUDA_INCLUDE}
    ${SRC}/tests/fuzz/npy_header_fuzz.cpp ${SRC}/engine/src/io/npy_header.cpp ${SRC}/core/src/types.cpp
    -o ${WORK}/npy_header_fuzz)
run("writing the seed corpus" ${WORK}/npy_header_fuzz --write-seeds=${WORK}/corpus)
# Crash inputs land in WORK (artifact_prefix), where the failure message points.
run("fuzzing for ${MAX_TIME} s" ${WORK}/npy_header_fuzz -max_total_time=${MAX_TIME} -max_len=4096 -timeout=5
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" executed "${last_output}")
string(REGEX MATCHALL "cov: [0-9]+ ft: [0-9]+" coverage "${last_output}")
list(POP_BACK coverage final_coverage)
message(STATUS "npy_header_fuzz: ${executed}, ${final_coverage}")
