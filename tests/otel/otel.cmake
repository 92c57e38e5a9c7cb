# The OTLP exporter tests (tests/providers/otlp_test.cpp) send to
# tests/otel/receiver.mjs, which decodes with the OpenTelemetry project's own
# generated OTLP definitions (@opentelemetry/otlp-transformer, pinned by
# tests/otel/package-lock.json). The otel.npm_ci fixture installs them into
# the build tree (agentkit_npm_fixture); after that the tests run
# offline. Included from tests/CMakeLists.txt after the providers suite.
set(AGENTKIT_OTEL_RECEIVER_DIR ${PROJECT_BINARY_DIR}/otel-receiver)
agentkit_npm_fixture(otel_receiver otel ${AGENTKIT_OTEL_RECEIVER_DIR})

target_compile_definitions(agentkit_providers_tests PRIVATE
  AGENTKIT_NODE="${AGENTKIT_NODE}"
  AGENTKIT_OTEL_RECEIVER="${CMAKE_CURRENT_SOURCE_DIR}/otel/receiver.mjs"
  AGENTKIT_OTEL_RECEIVER_DIR="${AGENTKIT_OTEL_RECEIVER_DIR}")

# The two-process trace test runs example 03 (a run suspended in one process
# and resumed in another) with OTEL_EXPORTER_OTLP_ENDPOINT at the receiver.
if(TARGET example_03_refund_approval)
  add_dependencies(agentkit_providers_tests example_03_refund_approval)
  target_compile_definitions(agentkit_providers_tests PRIVATE
    AGENTKIT_EXAMPLE_03="$<TARGET_FILE:example_03_refund_approval>")
endif()
