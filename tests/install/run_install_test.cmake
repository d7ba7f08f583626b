# ctest -P script: installs the build tree under WORK/staged, moves it to WORK/moved/prefix (the package
# must be relocatable: no path of the build machine or of the first prefix in it), configures and builds a
# consumer project against it with find_package(mgjoin CONFIG), and runs the example it built (CPU path
# without GPUs) and the installed CLI. HAVE_DIST: the build made libmgjoin_dist (MPI found).
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/staged)
file(MAKE_DIRECTORY ${WORK}/moved)
file(RENAME ${WORK}/staged ${WORK}/moved/prefix)
set(prefix ${WORK}/moved/prefix)

set(must include/mgjoin/join.hpp include/mgjoin/error.hpp lib/libengine.a lib/cmake/mgjoin/mgjoinConfig.cmake
         lib/cmake/mgjoin/FindHWLOC.cmake bin/mgjoin)
if(HAVE_DIST)
  list(APPEND must include/mgjoin/distributed.hpp lib/libmgjoin_dist.a lib/cmake/mgjoin/mgjoinDistributedTargets.cmake)
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
