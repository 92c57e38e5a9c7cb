// Where this build's files are. tests/CMakeLists.txt defines each
// AGENTKIT_<NAME> macro a suite uses (AGENTKIT_CLI, AGENTKIT_SHARED_DIR, ...)
// as one of these names and generates the one source that holds their
// values, so no other test object depends on where the checkout or the build
// is: ccache reuses them across clones. Include this before using a macro.
#pragma once

namespace agentkit_test_paths {
extern const char shared_dir[];
extern const char source_dir[];
extern const char cli[];
extern const char example_03[];
extern const char durable_child[];
extern const char summary_dir[];
extern const char node[];
extern const char otel_receiver[];
extern const char otel_receiver_dir[];
extern const char mcp_servers_dir[];
extern const char mcp_fake_server[];
extern const char mcp_loopback_preload[];
}  // namespace agentkit_test_paths
