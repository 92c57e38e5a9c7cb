#include <agentkit/testing/fake_llm.h>

#include <algorithm>

#include <agentkit/context.h>

namespace agentkit::testing {
namespace {

// `text` in up to three pieces, cut only before a UTF-8 lead byte.
std::vector<std::string> fragments(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (int piece = 1; piece < 3 && from < text.size(); ++piece) {
    std::size_t at = std::max(from + 1, text.size() * piece / 3);
    while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    if (at >= text.size()) break;
    out.push_back(text.substr(from, at - from));
    from = at;
  }
  if (from < text.size()) out.push_back(text.substr(from));
  return out;
}

// The deltas a streaming adapter would emit for `turn`, in reply order.
void stream(const Turn& turn, const RunContext& ctx) {
  for (const auto& part : turn.parts) {
    if (const auto* r = std::get_if<ReasoningPart>(&part)) {
      for (auto& f : fragments(r->text)) ctx.emit(ReasoningDelta{std::move(f)});
    } else if (const auto* t = std::get_if<TextPart>(&part)) {
      for (auto& f : fragments(t->text)) ctx.emit(TextDelta{std::move(f)});
    }
  }
  for (auto& f : fragments(turn.content)) ctx.emit(TextDelta{std::move(f)});
  for (std::size_t i = 0; i < turn.tool_calls.size(); ++i) {
    const ToolCall& call = turn.tool_calls[i];
    ctx.emit(ToolCallDelta{i, call.id, call.name, {}});
    const std::string arguments = !call.arguments_text.empty() ? call.arguments_text
                                  : call.arguments.is_null()  ? std::string("{}")
                                                              : call.arguments.dump();
    for (auto& f : fragments(arguments)) ctx.emit(ToolCallDelta{i, call.id, call.name, std::move(f)});
  }
}

}  // namespace

ModelResponse FakeLLM::complete(const ModelRequest& request, RunContext& ctx) {
  std::unique_lock lock(mutex_);
  const std::size_t call = next_ + 1;
  if (record_) {
    Request r{std::string(request.model), std::string(request.system),
              std::vector<Message>(request.messages.begin(), request.messages.end()), {}};
    for (const ToolSpec* spec : request.tools) r.tools.push_back(spec->name);
    if (request.settings) r.settings = *request.settings;
    r.traceparent = request.traceparent;
    requests_.push_back(std::move(r));
  }
  if (next_ >= turns_.size()) {
    std::string last = request.messages.empty() ? std::string("(none)") : request.messages.back().text();
    if (last.size() > 120) last = last.substr(0, 120) + "...";
    throw ScriptExhausted("FakeLLM: script exhausted at model call #" + std::to_string(call) + " (the script has " +
                          std::to_string(turns_.size()) + " turns); last message: " + last);
  }
  const Turn& turn = turns_[next_++];
  if (!turn.throws.empty()) throw std::runtime_error(turn.throws);
  ModelResponse response;
  response.message = Message::assistant(turn.parts, turn.tool_calls);
  response.message.add_text(turn.content);
  response.usage = turn.usage;
  response.id = "fake_" + std::to_string(call);  // as a provider names its responses
  response.model = request.model;
  response.finish_reason = !turn.finish_reason.empty() ? turn.finish_reason
                           : turn.tool_calls.empty()    ? "stop"
                                                        : "tool_calls";
  if (streaming_) {
    // Emitted unlocked: an observer may call back into this FakeLLM.
    const Turn streamed = turn;
    lock.unlock();
    stream(streamed, ctx);
  }
  return response;
}

std::vector<FakeLLM::Request> FakeLLM::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t FakeLLM::calls() const {
  std::lock_guard lock(mutex_);
  return next_;
}

std::size_t FakeLLM::remaining() const {
  std::lock_guard lock(mutex_);
  return turns_.size() - std::min(next_, turns_.size());
}

void FakeLLM::record_requests(bool on) {
  std::lock_guard lock(mutex_);
  record_ = on;
}

void FakeLLM::rewind() {
  std::lock_guard lock(mutex_);
  next_ = 0;
}

void FakeLLM::streaming(bool on) {
  std::lock_guard lock(mutex_);
  streaming_ = on;
}

}  // namespace agentkit::testing
