# Builds and runs one consumer project; ctest runs it as `cmake -P`.
#
#   MODE                 install: install AGENTKIT_BINARY_DIR into WORK_DIR/prefix and
#                                 build find_package/ against that prefix
#                        subdirectory: build add_subdirectory/ with AGENTKIT_SOURCE_DIR
#                                 vendored via add_subdirectory()
#   AGENTKIT_SOURCE_DIR, AGENTKIT_BINARY_DIR, CONSUMER_SOURCE_DIR, WORK_DIR
#   GENERATOR, MAKE_PROGRAM, CXX_COMPILER, COMPILER_LAUNCHER, BUILD_TYPE, JOBS
#
# WORK_DIR is reused between runs (an incremental rebuild, ccache for the
# rest); the install prefix is recreated every time so nothing stale masks a
# missing install rule.
cmake_minimum_required(VERSION 3.25)

foreach(var MODE AGENTKIT_SOURCE_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

# The nested builds are separate projects: keep the outer make's flags and
# variable overrides away from them.
unset(ENV{MAKEFLAGS})
unset(ENV{MFLAGS})
unset(ENV{MAKELEVEL})
# Leave the compile directory out of ccache's hash (as `make` does for build/),
# so compiling agentkit's sources from here hits the objects of the main build.
if(NOT DEFINED ENV{CCACHE_NOHASHDIR})
  set(ENV{CCACHE_NOHASHDIR} 1)
endif()

function(run_step what)
  message(STATUS "consumer(${MODE}): ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer(${MODE}): ${what} failed (${rc}):\n  ${ARGN}")
  endif()
endfunction()

set(build_dir "${WORK_DIR}/build")
set(configure_args -S "${CONSUMER_SOURCE_DIR}" -B "${build_dir}" -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(COMPILER_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER}")
endif()
# Always passed, so an empty BUILD_TYPE also clears one a reused WORK_DIR cached.
list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(BUILD_TYPE)
  set(config_args --config "${BUILD_TYPE}")
endif()
if(NOT JOBS)
  cmake_host_system_information(RESULT JOBS QUERY NUMBER_OF_LOGICAL_CORES)
endif()

if(MODE STREQUAL "install")
  if(NOT AGENTKIT_BINARY_DIR)
    message(FATAL_ERROR "run_consumer.cmake: -DAGENTKIT_BINARY_DIR=... is required for MODE=install")
  endif()
  set(prefix "${WORK_DIR}/prefix")
  file(REMOVE_RECURSE "${prefix}")
  run_step("install agentkit into ${prefix}"
           "${CMAKE_COMMAND}" --install "${AGENTKIT_BINARY_DIR}" --prefix "${prefix}" ${config_args})
  # Only the fresh prefix may satisfy find_package(agentkit).
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
       -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON)
elseif(MODE STREQUAL "subdirectory")
  list(APPEND configure_args "-DAGENTKIT_SOURCE_TREE=${AGENTKIT_SOURCE_DIR}")
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()

run_step("configure ${CONSUMER_SOURCE_DIR}" "${CMAKE_COMMAND}" ${configure_args})
run_step("build" "${CMAKE_COMMAND}" --build "${build_dir}" -j ${JOBS} ${config_args})

if(MODE STREQUAL "install")
  load_cache("${build_dir}" READ_WITH_PREFIX consumer_ agentkit_DIR)
  cmake_path(IS_PREFIX prefix "${consumer_agentkit_DIR}" NORMALIZE from_prefix)
  if(NOT from_prefix)
    message(FATAL_ERROR "consumer(install): found agentkit in ${consumer_agentkit_DIR}, not under ${prefix}")
  endif()
else()
  # agentkit as a subproject must add nothing to its parent's install.
  set(stray "${WORK_DIR}/install-check")
  file(REMOVE_RECURSE "${stray}")
  run_step("install the consumer (expect nothing from agentkit)"
           "${CMAKE_COMMAND}" --install "${build_dir}" --prefix "${stray}" ${config_args})
  file(GLOB_RECURSE stray_files LIST_DIRECTORIES false "${stray}/*")
  file(REMOVE_RECURSE "${stray}")
  if(stray_files)
    message(FATAL_ERROR "consumer(subdirectory): agentkit installed files as a subproject:\n  ${stray_files}")
  endif()
endif()

set(program "${build_dir}/consumer")
if(NOT EXISTS "${program}" AND BUILD_TYPE)
  set(program "${build_dir}/${BUILD_TYPE}/consumer")  # multi-config generators
endif()
execute_process(COMMAND "${program}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "consumer ok\n")
  message(FATAL_ERROR "consumer(${MODE}): ${program} exited with ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
message(STATUS "consumer(${MODE}): ${program} printed: consumer ok")
