// MCP JSON-RPC message handling: a scripted server answers the client's
// handshake, tools/list and tools/call with the input's messages, and sends
// requests and notifications of its own in between. Every exchange ends in a
// typed error (McpError, McpToolError, ToolArgumentError) or a result; the
// client never crashes, hangs or leaks.
//
// Input: newline-separated server messages, each parsed as the stdio
// transport parses a line (mcp_detail::parse_message; unparseable lines are
// skipped). A response without an "id" answers the request being served.
// "!expire" reports that request as failed with session_expired; "!close"
// ends the connection. When the script runs out, the connection closes.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/context.h>
#include <agentkit/errors.h>
#include <agentkit/invoker.h>
#include <agentkit/providers/mcp.h>

#include "../../providers/src/mcp_detail.h"
#include "fuzz_support.h"

namespace {

using agentkit::Json;
using agentkit::providers::McpError;
using agentkit::providers::McpTransport;

class ScriptedTransport final : public McpTransport {
 public:
  explicit ScriptedTransport(std::vector<std::string> lines) : lines_(std::move(lines)) {}

  void start(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }

  // Runs on the caller's thread or a client worker; one at a time.
  void send(const Json& message) override {
    std::lock_guard lock(mutex_);
    if (closed_) throw McpError(McpError::Kind::disconnected, "scripted server: closed");
    const auto id = message.find("id");
    if (!message.contains("method") || id == message.end()) return;  // a notification or a reply
    while (next_ < lines_.size()) {
      const std::string& line = lines_[next_++];
      if (line == "!close") break;
      if (line == "!expire") {
        callbacks_.failed(message, McpError(McpError::Kind::session_expired, "scripted server: session expired"));
        return;
      }
      std::string problem;
      auto parsed = agentkit::providers::mcp_detail::parse_message(line, problem);
      if (!parsed) continue;
      bool answers = false;
      if (parsed->is_object() && !parsed->contains("method") &&
          (parsed->contains("result") || parsed->contains("error"))) {
        if (!parsed->contains("id")) (*parsed)["id"] = *id;
        answers = (*parsed)["id"].type() == id->type() && (*parsed)["id"] == *id;
      }
      callbacks_.message(std::move(*parsed));
      if (answers) return;
    }
    closed_ = true;
    callbacks_.closed("scripted server: end of script");
  }

  void close() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  std::string describe() const override { return "scripted server"; }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
  std::size_t next_ = 0;
  bool closed_ = false;
  Callbacks callbacks_;
};

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

template <class F>
void typed(F&& f) {
  try {
    f();
  } catch (const McpError&) {
  } catch (const agentkit::providers::McpToolError&) {
  } catch (const agentkit::ToolArgumentError&) {
  } catch (const agentkit::OutcomeUnknownError&) {
  } catch (const std::exception& e) {
    agentkit::fuzz::untyped(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto quiet = std::make_shared<spdlog::logger>("fuzz_mcp", std::make_shared<spdlog::sinks::null_sink_mt>());
  agentkit::providers::McpClientOptions options;
  options.request_timeout = std::chrono::milliseconds(2'000);  // never reached: the script answers or closes
  options.roots = std::vector<agentkit::providers::McpRoot>{{"file:///tmp/fuzz", "fuzz"}};
  options.sampling = [](const Json& params) {
    return Json{{"role", "assistant"}, {"content", {{"type", "text"}, {"text", params.dump().substr(0, 16)}}}};
  };
  options.logger = quiet;
  agentkit::providers::McpClient client(
      std::make_unique<ScriptedTransport>(split_lines(agentkit::fuzz::as_text(data, size))), options);
  bool connected = false;
  typed([&] {
    client.connect();
    connected = true;
  });
  if (!connected) return 0;
  agentkit::RunContext ctx;
  int calls = 0;
  for (const auto& tool : client.tools()) {
    if (++calls > 4) break;
    // The tool's own checks first (its inputSchema), then the call itself.
    typed([&] {
      const Json value = tool->run(Json::object(), ctx);
      (void)value.dump();
    });
    typed([&] {
      const auto result = client.call_tool(tool->spec().metadata.at("mcp").at("name").get<std::string>(),
                                           Json{{"x", 1}}, &ctx);
      (void)result.text();
      (void)result.value();
    });
  }
  typed([&] { (void)client.request("resources/list"); });
  client.close();
  return 0;
}
