# The MCP suite: tests/mcp/*.cpp against the pinned reference servers
# (installed by the mcp.npm_ci fixture into the build tree) and
# fake_server.mjs. Included from tests/CMakeLists.txt.
set(AGENTKIT_MCP_SERVERS_DIR ${PROJECT_BINARY_DIR}/mcp-servers)
agentkit_npm_fixture(mcp_servers mcp ${AGENTKIT_MCP_SERVERS_DIR})

agentkit_test_suite(mcp FIXTURES_REQUIRED mcp_servers)
agentkit_test_paths(agentkit_mcp_tests
  AGENTKIT_NODE node "${AGENTKIT_NODE}"
  AGENTKIT_MCP_SERVERS_DIR mcp_servers_dir "${AGENTKIT_MCP_SERVERS_DIR}"
  AGENTKIT_MCP_FAKE_SERVER mcp_fake_server "${CMAKE_CURRENT_SOURCE_DIR}/mcp/fake_server.mjs"
  AGENTKIT_MCP_LOOPBACK_PRELOAD mcp_loopback_preload "${CMAKE_CURRENT_SOURCE_DIR}/mcp/loopback_only.cjs")
# The server tests also run `agentkit serve` as a child.
if(TARGET agentkit)
  add_dependencies(agentkit_mcp_tests agentkit)
  agentkit_test_paths(agentkit_mcp_tests AGENTKIT_CLI cli "$<TARGET_FILE:agentkit>")
endif()
