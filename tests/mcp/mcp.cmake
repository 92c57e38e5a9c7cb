# The MCP suite: tests/mcp/*.cpp against the pinned reference servers
# (installed by the mcp.npm_ci fixture into the build tree) and
# fake_server.mjs. Included from tests/CMakeLists.txt.
find_program(AGENTKIT_NODE node)
find_program(AGENTKIT_NPM npm)
set(AGENTKIT_MCP_SERVERS_DIR ${PROJECT_BINARY_DIR}/mcp-servers)

add_test(NAME mcp.npm_ci
         COMMAND ${CMAKE_COMMAND} -DNODE=${AGENTKIT_NODE} -DNPM=${AGENTKIT_NPM}
                 -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/mcp -DDEST=${AGENTKIT_MCP_SERVERS_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/mcp/npm_ci.cmake)
set_tests_properties(mcp.npm_ci PROPERTIES FIXTURES_SETUP mcp_servers TIMEOUT 600)

agentkit_test_suite(mcp FIXTURES_REQUIRED mcp_servers)
target_compile_definitions(agentkit_mcp_tests PRIVATE
  AGENTKIT_NODE="${AGENTKIT_NODE}"
  AGENTKIT_MCP_SERVERS_DIR="${AGENTKIT_MCP_SERVERS_DIR}"
  AGENTKIT_MCP_FAKE_SERVER="${CMAKE_CURRENT_SOURCE_DIR}/mcp/fake_server.mjs"
  AGENTKIT_MCP_LOOPBACK_PRELOAD="${CMAKE_CURRENT_SOURCE_DIR}/mcp/loopback_only.cjs")
