#pragma once
// Models are an interface: FakeLLM and the provider adapters implement it.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <agentkit/error.h>
#include <agentkit/messages.h>
#include <agentkit/tool.h>

namespace agentkit {

class RunContext;

// What one model call sees. Views into the run's own state: a model MUST NOT
// keep these spans past `complete` (copy what you need).
struct ModelRequest {
  std::string_view model;                  // e.g. "fake", "openai/gpt-4o-mini"
  std::string_view system;                 // the agent's prompt
  std::span<const Message> messages;       // history, oldest first
  std::span<const ToolSpec* const> tools;  // advertised tools, sorted by name
  const Schema* output_schema = nullptr;   // the agent's declared output type, if any
};

struct ModelResponse {
  Message message;                   // role assistant
  Usage usage;
  std::string finish_reason = "stop";  // normalised: stop, tool_calls, length, content_filter, error
};

// A failed model call as the run engine sees it: a canonical code naming why
// (truncated, rate_limited, protocol, ...), the provider's HTTP status,
// retry advice and Retry-After when a provider answered, and the usage the
// provider reported before it failed (a stream cut short has spent tokens).
// The engine charges that usage to the run's budget, usage meter and
// RunState, stops the run `failed`, and puts the code and the details in
// RunResult::failure. Provider adapters throw providers::ProviderError,
// which derives from this; any other model may throw it too. A model that
// throws another agentkit::Error fails the run with that error's code; one
// that throws anything else, with ErrorCode::internal.
class ModelError : public Error {
 public:
  ModelError(ErrorCode code, const std::string& message, Usage usage = {}, int http_status = 0,
             bool retryable = false, std::optional<std::chrono::milliseconds> retry_after = std::nullopt)
      : Error(code, message),
        usage_(usage),
        http_status_(http_status),
        retryable_(retryable),
        retry_after_(retry_after) {}
  const Usage& usage() const noexcept { return usage_; }
  // The provider's HTTP status; 0 when there was no HTTP response.
  int http_status() const noexcept { return http_status_; }
  // Whether the provider says trying again later may succeed.
  bool retryable() const noexcept { return retryable_; }
  std::optional<std::chrono::milliseconds> retry_after() const noexcept { return retry_after_; }

 private:
  Usage usage_;
  int http_status_;
  bool retryable_;
  std::optional<std::chrono::milliseconds> retry_after_;
};

// A model call in flight, advanced by its owner without blocking.
class PendingCompletion {
 public:
  virtual ~PendingCompletion() = default;
  // Advances the call without blocking (no sleeping, no waiting on the
  // network); true once the response or an error is ready.
  virtual bool poll() = 0;
  // Blocks up to `max` until poll() may make progress (for blocking drivers).
  virtual void wait(std::chrono::milliseconds max) = 0;
  // The response, or throws the call's error. Valid once poll() returned true.
  virtual ModelResponse take() = 0;
  // Aborts the call; poll() then returns true and take() throws.
  virtual void cancel() = 0;
};

// A model. `complete` may block (network). A model that can also run a call
// without blocking returns it from `begin`; the run loop then advances it
// from RunHandle::poll() on the host's thread. Otherwise the loop runs
// `complete` on the run's executor (inline when the context has none).
// Implementations MUST be safe to call from several runs at once. Failures
// throw, preferably a ModelError (provider errors are typed in
// agentkit::providers and derive from it).
class Model {
 public:
  virtual ~Model() = default;
  virtual ModelResponse complete(const ModelRequest& request, RunContext& ctx) = 0;
  // A non-blocking call, or nullptr when this model has none. MUST copy what
  // it needs from `request` before returning.
  virtual std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) {
    (void)request;
    (void)ctx;
    return nullptr;
  }
};

// Resolves an agent's model name to a model.
using ModelResolver = std::function<std::shared_ptr<Model>(std::string_view name)>;

}  // namespace agentkit
