#pragma once
// Helpers for the MCP server tests: a tool made of a lambda, and a client
// transport wired straight to an McpServer session in this process.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <agentkit/providers/mcp.h>
#include <agentkit/providers/mcp_server.h>
#include <agentkit/tool.h>

namespace mcp_test {

// A tool whose spec and body the test writes out.
class LambdaTool final : public agentkit::Tool {
 public:
  using Body = std::function<agentkit::ToolOutput(const agentkit::Json&, agentkit::RunContext&)>;
  LambdaTool(agentkit::ToolSpec spec, Body body) : spec_(std::move(spec)), body_(std::move(body)) {}
  const agentkit::ToolSpec& spec() const noexcept override { return spec_; }
  agentkit::Json run(const agentkit::Json& arguments, agentkit::RunContext& ctx) const override {
    return body_(arguments, ctx).value;
  }
  agentkit::ToolOutput run_output(const agentkit::Json& arguments, agentkit::RunContext& ctx) const override {
    return body_(arguments, ctx);
  }

 private:
  agentkit::ToolSpec spec_;
  Body body_;
};

inline agentkit::ToolSpec spec(std::string name, bool side_effecting, bool idempotent = false) {
  agentkit::ToolSpec s;
  s.name = std::move(name);
  s.description = "A test tool called " + s.name + " that the server test serves.";
  s.parameters = agentkit::Schema{{"type", "object"}, {"properties", agentkit::Schema::object()}};
  s.effects.side_effecting = side_effecting;
  s.effects.idempotent = idempotent;
  return s;
}

inline agentkit::ToolPtr lambda_tool(agentkit::ToolSpec s, LambdaTool::Body body) {
  return std::make_shared<LambdaTool>(std::move(s), std::move(body));
}

// An McpTransport for McpClient that talks to a session of `server` in this
// process. Messages to the client are delivered on a thread of the
// transport's own, as a real transport's reader would.
class InProcessTransport final : public agentkit::providers::McpTransport {
 public:
  explicit InProcessTransport(agentkit::providers::McpServer& server) : server_(server) {}
  ~InProcessTransport() override { close(); }

  void start(Callbacks callbacks) override {
    callbacks_ = std::move(callbacks);
    session_ = server_.open_session([this](const agentkit::Json& message) {
      std::lock_guard lock(mutex_);
      inbox_.push_back(message);
      cv_.notify_all();
    });
    reader_ = std::thread([this] { deliver(); });
  }
  void send(const agentkit::Json& message) override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) throw agentkit::providers::McpError(agentkit::providers::McpError::Kind::disconnected, "closed");
    }
    session_->receive(message);
  }
  void close() override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      cv_.notify_all();
    }
    if (session_) session_->close();
    if (reader_.joinable()) reader_.join();
  }
  std::string describe() const override { return "in-process server"; }
  agentkit::providers::McpServerSession& session() { return *session_; }

 private:
  void deliver() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return closed_ || !inbox_.empty(); });
      if (closed_) return;
      agentkit::Json message = std::move(inbox_.front());
      inbox_.pop_front();
      lock.unlock();
      callbacks_.message(std::move(message));
      lock.lock();
    }
  }

  agentkit::providers::McpServer& server_;
  std::shared_ptr<agentkit::providers::McpServerSession> session_;
  Callbacks callbacks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<agentkit::Json> inbox_;
  bool closed_ = false;
  std::thread reader_;
};

}  // namespace mcp_test
