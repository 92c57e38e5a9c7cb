# Runs a README program (PROGRAM) and checks that it exits 0 and that its
# output contains the text in EXPECT_FILE. Used by tests/readme/CMakeLists.txt.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${EXPECT_FILE} expected)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the output does not contain: ${expected}")
endif()
