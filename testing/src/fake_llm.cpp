#include <agentkit/testing/fake_llm.h>

namespace agentkit::testing {

ModelResponse FakeLLM::complete(const ModelRequest& request, RunContext&) {
  std::lock_guard lock(mutex_);
  const std::size_t call = next_ + 1;
  if (record_) {
    Request r{std::string(request.model), std::string(request.system),
              std::vector<Message>(request.messages.begin(), request.messages.end()), {}};
    for (const ToolSpec* spec : request.tools) r.tools.push_back(spec->name);
    if (request.settings) r.settings = *request.settings;
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
  response.finish_reason = !turn.finish_reason.empty() ? turn.finish_reason
                           : turn.tool_calls.empty()    ? "stop"
                                                        : "tool_calls";
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

}  // namespace agentkit::testing
