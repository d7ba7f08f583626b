# ctest -P script: installs the build tree under WORK/staged, moves it to WORK/moved/prefix (the package
# must be relocatable: no path of the build machine or of the first prefix in it), configures and builds a
# consumer project against it with find_package(mgjoin CONFIG), and runs the example it built (CPU path
# without GPUs) and the installed CLI. HAVE_DIST: the build made libmgjoin_dist (MPI found). HAVE_PARQUET:
# the CLI has Arrow (MGJOIN_PARQUET), whose libraries the install copies into lib/mgjoin: the moved CLI
# writes and reads Parquet with them, and with neither the build tree nor pyarrow's folder named in it.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/staged)
if(HAVE_PARQUET)
  # libarrow_compute too from Arrow 21 on (the moved CLI would not start without it).
  file(GLOB arrow_libs ${WORK}/staged/lib/mgjoin/libarrow.so.* ${WORK}/staged/lib/mgjoin/libparquet.so.*)
  list(LENGTH arrow_libs arrow_lib_count)
  if(NOT arrow_lib_count EQUAL 2)
    message(FATAL_ERROR "the install tree lacks Arrow's libraries in lib/mgjoin (has: ${arrow_libs})")
  endif()
endif()
file(MAKE_DIRECTORY ${WORK}/moved)
file(RENAME ${WORK}/staged ${WORK}/moved/prefix)
set(prefix ${WORK}/moved/prefix)

set(must include/mgjoin/join.hpp include/mgjoin/error.hpp lib/libengine.a lib/cmake/mgjoin/mgjoinConfig.cmake
         lib/cmake/mgjoin/FindHWLOC.cmake bin/mgjoin)
if(HAVE_DIST)
  list(APPEND must include/mgjoin/distributed.hpp lib/libmgjoin_dist.a lib/cmake/mgjoin/mgjoinDistributedTargets.cmake)
endif()
if(HAVE_PARQUET)
  list(APPEND must share/doc/mgjoin/arrow/LICENSE.txt share/doc/mgjoin/arrow/NOTICE.txt)
endif()
foreach(file ${must})
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install tree lacks ${file}")
  endif()
endforeach()
if(EXISTS ${prefix}/include/core OR EXISTS ${prefix}/include/alloc)
  message(FATAL_ERROR "internal headers were installed")
endif()
# Relocatable: dependencies are imported targets found on the user's machine, never a path of this one.
file(GLOB package_files ${prefix}/lib/cmake/mgjoin/*.cmake)
foreach(file ${package_files})
  file(STRINGS ${file} absolute REGEX "^[^#]*(/(usr|opt|work|home|tmp)/|libnccl|${WORK}|${BUILD})")  # not comments
  if(absolute)
    message(FATAL_ERROR "${file} names a path of the build machine:\n${absolute}")
  endif()
endforeach()

run("configuring the consumer" ${CMAKE_COMMAND} -S ${SRC}/tests/install/consumer -B ${WORK}/build -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DMGJOIN_EXAMPLE_SOURCE=${SRC}/apps/example/example.cpp)
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
if(HAVE_DIST AND NOT EXISTS ${WORK}/build/uses_distributed)
  message(FATAL_ERROR "the consumer found no mgjoin::distributed")
endif()
run("running the example" ${WORK}/build/example)
message(STATUS "${last_output}")
run("running the installed CLI" ${prefix}/bin/mgjoin --version)
message(STATUS "${last_output}")
if(HAVE_PARQUET)
  find_program(READELF readelf REQUIRED)  # binutils, beside the compiler
  run("reading the installed CLI's RPATH" ${READELF} -d ${prefix}/bin/mgjoin)
  string(REGEX MATCH "R(UN)?PATH[^\n]*" rpath "${last_output}")
  if(NOT rpath MATCHES "\\$ORIGIN/../lib/mgjoin" OR rpath MATCHES "site-packages|${BUILD}")
    message(FATAL_ERROR "the installed CLI's ${rpath}: expected $ORIGIN/../lib/mgjoin alone")
  endif()
  set(cli ${prefix}/bin/mgjoin)
  run("generating tables" ${cli} generate --workload A --scale 0.00001 --seed 1 -q --out-dir ${WORK}/gen)
  run("writing Parquet" ${cli} join --r-key ${WORK}/gen/r_key.npy --s-key ${WORK}/gen/s_key.npy --gpus 0 -q
      --format parquet --out-dir ${WORK}/pq)
  run("reading Parquet" ${cli} join --r ${WORK}/pq/part-0.parquet --s ${WORK}/pq/part-0.parquet --on key --gpus 0 --count)
  message(STATUS "the moved CLI read its Parquet output: ${last_output}")
endif()
