# The OTLP exporter tests (tests/providers/otlp_test.cpp) send to
# tests/otel/receiver.mjs, which decodes with the OpenTelemetry project's own
# generated OTLP definitions (@opentelemetry/otlp-transformer, pinned by
# tests/otel/package-lock.json). The otel.npm_ci fixture installs them into
# the build tree (agentkit_npm_fixture); after that the tests run
# offline. Included from tests/CMakeLists.txt after the providers suite.
set(AGENTKIT_OTEL_RECEIVER_DIR ${PROJECT_BINARY_DIR}/otel-receiver)
agentkit_npm_fixture(otel_receiver otel ${AGENTKIT_OTEL_RECEIVER_DIR})

agentkit_test_paths(agentkit_providers_tests
  AGENTKIT_NODE node "${AGENTKIT_NODE}"
  AGENTKIT_OTEL_RECEIVER otel_receiver "${CMAKE_CURRENT_SOURCE_DIR}/otel/receiver.mjs"
  AGENTKIT_OTEL_RECEIVER_DIR otel_receiver_dir "${AGENTKIT_OTEL_RECEIVER_DIR}")

# The two-process trace test runs example 03 (a run suspended in one process
# and resumed in another) with OTEL_EXPORTER_OTLP_ENDPOINT at the receiver.
if(TARGET example_03_refund_approval)
  add_dependencies(agentkit_providers_tests example_03_refund_approval)
  agentkit_test_paths(agentkit_providers_tests
    AGENTKIT_EXAMPLE_03 example_03 "$<TARGET_FILE:example_03_refund_approval>")
endif()
