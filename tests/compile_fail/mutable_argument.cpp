// expect: tool parameters are immutable
#include <agentkit/function_tool.h>

auto t = agentkit::tool("t")
             .doc("A tool that would edit its own arguments in place.")
             .side_effecting(false)
             .params("name")
             .fn([](std::string& name) { return name; });
