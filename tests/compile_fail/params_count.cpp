// expect: \.params\(\) must name every data parameter
#include <agentkit/function_tool.h>

auto t = agentkit::tool("t")
             .doc("A tool whose parameter names do not match its signature.")
             .side_effecting(false)
             .params("a")
             .fn([](int a, int b) { return a + b; });
