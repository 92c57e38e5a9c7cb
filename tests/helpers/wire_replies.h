// Replies of the loopback WireServer that stand in for a provider or service.
#pragma once

#include <agentkit/json.h>
#include <agentkit/testing/wire_server.h>

namespace agentkit_test {

// `body` as an application/json reply with `status`.
inline agentkit::testing::WireServer::Response json_reply(const agentkit::Json& body, int status = 200) {
  agentkit::testing::WireServer::Response r;
  r.status = status;
  r.headers = {{"content-type", "application/json"}};
  r.body = body.dump();
  return r;
}

}  // namespace agentkit_test
