#pragma once
// What README.md's C++ fragments may use without declaring it (see
// CMakeLists.txt here): every public header, and the objects below, which the
// surrounding prose introduces. They are declared, never defined: fragments
// are only compiled, never linked.
#include <iostream>

#include <agentkit/agent.h>
#include <agentkit/agent_data.h>
#include <agentkit/agent_guardrails.h>
#include <agentkit/cognition/react.h>
#include <agentkit/context.h>
#include <agentkit/egress.h>
#include <agentkit/errors.h>
#include <agentkit/events.h>
#include <agentkit/executor.h>
#include <agentkit/fleet.h>
#include <agentkit/function_tool.h>
#include <agentkit/invoker.h>
#include <agentkit/registry.h>
#include <agentkit/replay.h>
#include <agentkit/session.h>
#include <agentkit/skills.h>
#include <agentkit/providers/mcp.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/rest_tool.h>
#include <agentkit/providers/tool_data.h>
#include <agentkit/providers/tool_format.h>
#include <agentkit/state/memory_tool.h>
#include <agentkit/state/postgres_run_queue.h>
#include <agentkit/state/postgres_store.h>
#include <agentkit/state/sqlite_store.h>
#include <agentkit/state/store.h>
#include <agentkit/tool_data.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/replay.h>
#include <agentkit/testing/test_context.h>

namespace readme {

extern agentkit::RunContext ctx;         // a run's context, e.g. from make_test_ctx()
extern agentkit::Agent agent;            // an agent whose tools include refund
extern agentkit::ToolPtr city_population;  // {"city": string} -> population
extern agentkit::ToolPtr forecast;       // the Tools section's tool
extern agentkit::ToolPtr refund;         // side-effecting, requires approval
extern std::shared_ptr<const agentkit::Agent> boss;  // runs a billing sub-agent (as_tool) whose refund requires approval
extern std::vector<agentkit::ToolPtr> catalog;  // a plugin's tools (search, get, ...)
extern bool stop_condition;              // whatever makes a host stop a run

// A host's login session, as tools that depend on it see it.
struct BankSession {
  bool open() const;
  std::string customer() const;
};

}  // namespace readme
