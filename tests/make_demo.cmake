# `make demo` builds only the demo's target (and what it links), never the
# whole tree: every `cmake --build` that `make -n demo` would run names a
# --target. Run by the ctest case make.demo_builds_only_the_demo.
execute_process(COMMAND make -n -C ${SOURCE_DIR} demo BUILD_DIR=${BUILD_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make -n demo failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "[^\n]*--build [^\n]*" builds "${out}")
if(NOT builds)
  message(FATAL_ERROR "make -n demo runs no cmake --build:\n${out}")
endif()
foreach(build IN LISTS builds)
  if(NOT build MATCHES "--target example_")
    message(FATAL_ERROR "make demo builds more than the demo: ${build}")
  endif()
endforeach()
message("ok: ${builds}")
