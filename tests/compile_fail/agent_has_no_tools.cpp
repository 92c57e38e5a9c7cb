// expect: no matching function for call to .*Agent
#include <agentkit/agent.h>

// Tools live on the cognition: an Agent has no tools parameter.
agentkit::Agent agent("a", "fake", "p", std::vector<agentkit::ToolPtr>{});
