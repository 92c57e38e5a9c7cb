// expect: declare \.side_effecting\(true\) or \.side_effecting\(false\) before \.fn\(\)
#include <agentkit/function_tool.h>

auto send_email = agentkit::tool("send_email")
                      .doc("Send an email to a single recipient and return the message id.")
                      .params("to", "body")
                      .fn([](const std::string& to, const std::string&) { return to; });
