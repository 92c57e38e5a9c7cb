// expect: this type has no JSON Schema mapping
#include <agentkit/function_tool.h>

struct NotDescribed {
  int x;
};

auto t = agentkit::tool("t")
             .doc("A tool taking a type agentkit cannot describe at all.")
             .side_effecting(false)
             .params("value")
             .fn([](const NotDescribed& v) { return v.x; });
