#pragma once
// SpanRecorder: a trace::SpanSink that keeps every span in memory, for
// tests that assert what a run traced.
#include <mutex>
#include <string_view>
#include <vector>

#include <agentkit/trace.h>

namespace agentkit::testing {

// Example:
//   auto spans = std::make_shared<agentkit::testing::SpanRecorder>();
//   ctx.tracer = spans;
//   agent.run("...", ctx);
//   CHECK(spans->named("chat fake").size() == 2);
class SpanRecorder final : public trace::SpanSink {
 public:
  explicit SpanRecorder(bool capture_content = false) : capture_content_(capture_content) {}

  void on_end(trace::Span span) override {
    std::lock_guard lock(mutex_);
    spans_.push_back(std::move(span));
  }
  bool capture_content() const noexcept override { return capture_content_; }

  // Every span ended so far, in the order they ended.
  std::vector<trace::Span> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }
  // The spans called `name` ("chat fake", "execute_tool refund", ...).
  std::vector<trace::Span> named(std::string_view name) const {
    std::vector<trace::Span> out;
    for (auto& span : spans()) {
      if (span.name == name) out.push_back(std::move(span));
    }
    return out;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    spans_.clear();
  }

 private:
  bool capture_content_;
  mutable std::mutex mutex_;
  std::vector<trace::Span> spans_;
};

}  // namespace agentkit::testing
