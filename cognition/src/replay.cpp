#include <agentkit/replay.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <agentkit/errors.h>
#include <agentkit/events.h>
#include <agentkit/state/store.h>

namespace agentkit {

namespace detail {

// Stable names for runs, the same in a recording and its replay (run ids are
// random): a top-level run is "runN" in order of appearance; a sub-run is its
// parent's key plus the key of the call that started it. A sub-run's context
// is a child() of the call's, so its parent_span_id is the parent run's span
// and its call_key the call's.
class ReplayKeys {
 public:
  std::string run_key(const RunContext& ctx) {
    std::lock_guard lock(mutex_);
    if (!ctx.correlation_id.empty()) {
      if (auto it = by_run_.find(ctx.correlation_id); it != by_run_.end()) return it->second;
    }
    std::string key;
    auto parent = by_span_.find(ctx.parent_span_id.view());
    if (!ctx.parent_span_id.empty() && parent != by_span_.end() && !ctx.call_key.empty()) {
      const std::string base = parent->second + "/" + ctx.call_key;
      const int n = ++children_[base];
      key = n == 1 ? base : base + "#" + std::to_string(n);
    } else {
      key = "run" + std::to_string(++top_);
    }
    if (!ctx.correlation_id.empty()) by_run_[ctx.correlation_id] = key;
    if (!ctx.span_id.empty()) by_span_.emplace(ctx.span_id.str(), key);
    return key;
  }
  int next_step(const std::string& key) {
    std::lock_guard lock(mutex_);
    return ++steps_[key];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> by_run_;
  std::map<std::string, std::string, std::less<>> by_span_;
  std::map<std::string, int> steps_, children_;
  int top_ = 0;
};

}  // namespace detail

namespace {

using detail::ReplayKeys;

Json schema_json(const Schema& s) { return Json::parse(s.dump()); }

Json request_json(const ModelRequest& r) {
  Json j = {{"model", std::string(r.model)}, {"system", std::string(r.system)}};
  Json& messages = j["messages"] = Json::array();
  for (const Message& m : r.messages) messages.push_back(to_json(m));
  Json& tools = j["tools"] = Json::array();
  for (const ToolSpec* spec : r.tools) {
    tools.push_back({{"name", spec->name},
                     {"description", spec->description},
                     {"parameters", spec->parameters ? schema_json(*spec->parameters) : Json()}});
  }
  if (r.output_schema) j["output_schema"] = schema_json(*r.output_schema);
  if (r.settings && !r.settings->empty()) j["settings"] = r.settings->to_json();
  return j;
}

Json response_json(const ModelResponse& r) {
  return {{"message", to_json(r.message)}, {"usage", to_json(r.usage)}, {"finish_reason", r.finish_reason},
          {"id", r.id}, {"model", r.model}};
}

ModelResponse response_from_json(const Json& j) {
  ModelResponse r;
  r.message = message_from_json(j.at("message"));
  r.usage = usage_from_json(j.at("usage"));
  r.finish_reason = j.at("finish_reason").get<std::string>();
  r.id = j.value("id", "");
  r.model = j.value("model", "");
  return r;
}

Json error_json(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& error) {
    return {{"code", std::string(to_string(error.code()))}, {"message", error.what()}};
  } catch (const std::exception& error) {
    return {{"code", "internal"}, {"message", error.what()}};
  } catch (...) {
    return {{"code", "internal"}, {"message", "unknown exception"}};
  }
}

std::string where(const std::string& run, int step) { return run + "#" + std::to_string(step); }

std::string call_key(const ToolRequest& req) { return req.ledger_key.empty() ? req.call_id : req.ledger_key; }

}  // namespace

std::string_view to_string(ReplayClass c) noexcept {
  switch (c) {
    case ReplayClass::read_only: return "read_only";
    case ReplayClass::idempotent: return "idempotent";
    case ReplayClass::side_effecting: return "side_effecting";
  }
  return "side_effecting";
}

ReplayClass replay_class(const ToolRequest& request) {
  if (!request.tool) return ReplayClass::read_only;
  const Json& metadata = request.tool->spec().metadata;
  if (metadata.is_object() && metadata.contains("replay_class")) {
    const Json& v = metadata["replay_class"];
    if (v == "read_only") return ReplayClass::read_only;
    if (v == "idempotent") return ReplayClass::idempotent;
    if (v == "side_effecting") return ReplayClass::side_effecting;
    throw ToolDefinitionError("tool '" + request.tool->name() + "': metadata replay_class " + preview(v) +
                              " is not one of read_only, idempotent, side_effecting");
  }
  if (!request.effectively_side_effecting()) return ReplayClass::read_only;
  if (request.effectively_idempotent()) return ReplayClass::idempotent;
  return ReplayClass::side_effecting;
}

// ---------------------------------------------------------------- cassette

Json result_to_json(const ToolResult& r) {
  Json parts = Json::array();
  for (const ContentPart& p : r.parts) parts.push_back(to_json(p));
  return {{"status", std::string(to_string(r.status))}, {"value", r.value}, {"text", r.text},
          {"retryable", r.retryable}, {"parts", std::move(parts)}};
}

ToolResult result_from_json(const Json& j) {
  if (!j.is_object()) throw CassetteError("a tool result is not an object");
  const auto status = call_status_from_string(j.value("status", ""));
  if (!status) throw CassetteError("a tool result's status " + preview(j.value("status", Json())) + " is not a call status");
  ToolResult r;
  r.status = *status;
  r.value = j.value("value", Json());
  try {
    r.text = j.value("text", "");
    r.retryable = j.value("retryable", false);
    for (const Json& p : j.value("parts", Json::array())) r.parts.push_back(part_from_json(p));
  } catch (const std::exception& e) {
    throw CassetteError(std::string("a tool result is malformed: ") + e.what());
  }
  return r;
}

const ModelStep* Cassette::find_model(std::string_view run, int step) const {
  for (const ModelStep& s : model_steps) {
    if (s.run == run && s.step == step) return &s;
  }
  return nullptr;
}

const ToolStep* Cassette::find_tool(std::string_view run, std::string_view call) const {
  for (const ToolStep& s : tool_steps) {
    if (s.run == run && s.call == call) return &s;
  }
  return nullptr;
}

Json Cassette::to_json() const {
  Json models = Json::array();
  for (const ModelStep& s : model_steps) {
    models.push_back({{"run", s.run}, {"step", s.step}, {"agent", s.agent}, {"request", s.request},
                      {"response", s.response}, {"error", s.error}, {"seq", s.seq}});
  }
  Json tools = Json::array();
  for (const ToolStep& s : tool_steps) {
    tools.push_back({{"run", s.run}, {"call", s.call}, {"tool", s.tool}, {"arguments", s.arguments},
                     {"replay_class", s.replay_class}, {"results", s.results}, {"seq", s.seq}});
  }
  return {{"format", "agentkit-cassette"}, {"version", 1}, {"model_steps", std::move(models)},
          {"tool_steps", std::move(tools)}};
}

namespace {

// Reads field `key` of `j` as T, or throws CassetteError naming it.
template <class T>
T field(const Json& j, const char* key, const std::string& at) {
  auto it = j.find(key);
  if (it == j.end()) throw CassetteError(at + "." + key + ": missing");
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) throw CassetteError(at + "." + key + ": expected a string, got " + std::string(json_type_name(*it)));
  } else if constexpr (std::is_same_v<T, Json>) {
    return *it;
  } else {
    if (!it->is_number_integer()) throw CassetteError(at + "." + key + ": expected an integer, got " + std::string(json_type_name(*it)));
  }
  return it->get<T>();
}

}  // namespace

Cassette Cassette::from_json(const Json& doc, std::string_view source) {
  const std::string src(source);
  if (!doc.is_object() || doc.value("format", Json()) != "agentkit-cassette") {
    throw CassetteError(src + ": not an agentkit cassette (no \"format\": \"agentkit-cassette\")");
  }
  if (doc.value("version", Json()) != 1) throw CassetteError(src + ": cassette version " + preview(doc.value("version", Json())) + " is not 1");
  Cassette c;
  const Json models = doc.value("model_steps", Json());
  const Json tools = doc.value("tool_steps", Json());
  if (!models.is_array() || !tools.is_array()) throw CassetteError(src + ": model_steps and tool_steps must be arrays");
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string at = src + ": model_steps[" + std::to_string(i) + "]";
    const Json& j = models[i];
    if (!j.is_object()) throw CassetteError(at + ": not an object");
    ModelStep s{field<std::string>(j, "run", at), field<int>(j, "step", at), field<std::string>(j, "agent", at),
                field<Json>(j, "request", at), field<Json>(j, "response", at), field<Json>(j, "error", at),
                field<std::int64_t>(j, "seq", at)};
    if (!s.request.is_object()) throw CassetteError(at + ".request: not an object");
    if (s.error.is_null()) {
      try {
        (void)response_from_json(s.response);
      } catch (const std::exception& e) {
        throw CassetteError(at + ".response: " + e.what());
      }
    } else {
      (void)field<std::string>(s.error, "code", at + ".error");
      (void)field<std::string>(s.error, "message", at + ".error");
    }
    c.model_steps.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string at = src + ": tool_steps[" + std::to_string(i) + "]";
    const Json& j = tools[i];
    if (!j.is_object()) throw CassetteError(at + ": not an object");
    ToolStep s{field<std::string>(j, "run", at), field<std::string>(j, "call", at), field<std::string>(j, "tool", at),
               field<Json>(j, "arguments", at), field<std::string>(j, "replay_class", at), {},
               field<std::int64_t>(j, "seq", at)};
    const Json results = field<Json>(j, "results", at);
    if (!results.is_array()) throw CassetteError(at + ".results: not an array");
    for (const Json& r : results) {
      try {
        (void)result_from_json(r);
      } catch (const CassetteError& e) {
        throw CassetteError(at + ".results: " + e.what());
      }
      s.results.push_back(r);
    }
    c.tool_steps.push_back(std::move(s));
  }
  return c;
}

void Cassette::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << to_json().dump(1);
  if (!out.flush()) throw CassetteError("cannot write cassette " + path);
}

namespace {
Cassette parse_cassette(std::string_view text, const std::string& source) {
  Json doc;
  try {
    doc = parse_json(text, JsonLimits{.max_depth = 256, .max_bytes = std::size_t{1} << 30, .max_string_bytes = std::size_t{1} << 28},
                     source);
  } catch (const std::exception& e) {
    throw CassetteError(source + ": not readable as JSON: " + e.what());
  }
  return Cassette::from_json(doc, source);
}
}  // namespace

Cassette Cassette::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CassetteError("cannot read cassette " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_cassette(text.str(), path);
}

void Cassette::save(state::Store& store, std::string_view key) const { store.put(key, to_json().dump()); }

Cassette Cassette::load(state::Store& store, std::string_view key) {
  auto entry = store.get(key);
  if (!entry) throw CassetteError("no cassette under key '" + std::string(key) + "'");
  return parse_cassette(entry->value, "cassette '" + std::string(key) + "'");
}

// ---------------------------------------------------------------- recorder

namespace detail {
struct RecordState {
  ReplayKeys keys;
  std::mutex mutex;
  std::int64_t seq = 0;
  Cassette cassette;

  std::int64_t next_seq() {
    std::lock_guard lock(mutex);
    return ++seq;
  }
  void add(ModelStep s) {
    std::lock_guard lock(mutex);
    cassette.model_steps.push_back(std::move(s));
  }
  void add(const std::string& run, const ToolRequest& req, std::string cls, Json result) {
    std::lock_guard lock(mutex);
    const std::string call = call_key(req);
    auto& steps = cassette.tool_steps;
    auto it = std::find_if(steps.begin(), steps.end(), [&](const ToolStep& s) { return s.run == run && s.call == call; });
    if (it == steps.end()) it = steps.insert(steps.end(), ToolStep{run, call, req.name, req.arguments, std::move(cls), {}, 0});
    it->results.push_back(std::move(result));
    it->seq = ++seq;
  }
};
}  // namespace detail

namespace {

using detail::RecordState;
using detail::ReplayState;

// Records one model call's outcome.
void settle(RecordState& st, ModelStep step, const ModelResponse* response, std::exception_ptr error) {
  if (response) step.response = response_json(*response);
  if (error) step.error = error_json(error);
  st.add(std::move(step));
}

class RecordingPending final : public PendingCompletion {
 public:
  RecordingPending(std::unique_ptr<PendingCompletion> inner, std::shared_ptr<RecordState> st, ModelStep step)
      : inner_(std::move(inner)), st_(std::move(st)), step_(std::move(step)) {}
  bool poll() override { return inner_->poll(); }
  void wait(std::chrono::milliseconds max) override { inner_->wait(max); }
  void cancel() override { inner_->cancel(); }
  ModelResponse take() override {
    try {
      ModelResponse r = inner_->take();
      if (!done_) settle(*st_, step_, &r, nullptr);
      done_ = true;
      return r;
    } catch (...) {
      if (!done_) settle(*st_, step_, nullptr, std::current_exception());
      done_ = true;
      throw;
    }
  }

 private:
  std::unique_ptr<PendingCompletion> inner_;
  std::shared_ptr<RecordState> st_;
  ModelStep step_;
  bool done_ = false;
};

class RecordingModel final : public Model {
 public:
  RecordingModel(std::shared_ptr<Model> inner, std::shared_ptr<RecordState> st) : inner_(std::move(inner)), st_(std::move(st)) {}

  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override {
    ModelStep step = start(request, ctx);
    try {
      ModelResponse r = inner_->complete(request, ctx);
      settle(*st_, std::move(step), &r, nullptr);
      return r;
    } catch (...) {
      settle(*st_, std::move(step), nullptr, std::current_exception());
      throw;
    }
  }
  std::unique_ptr<PendingCompletion> begin(const ModelRequest& request, RunContext& ctx) override {
    auto pending = inner_->begin(request, ctx);
    if (!pending) return nullptr;  // the engine calls complete() instead
    return std::make_unique<RecordingPending>(std::move(pending), st_, start(request, ctx));
  }
  void check_schemas(std::span<const ToolSpec* const> tools, const Schema* output_schema) const override {
    inner_->check_schemas(tools, output_schema);
  }
  std::string_view provider() const noexcept override { return inner_->provider(); }

 private:
  ModelStep start(const ModelRequest& request, const RunContext& ctx) {
    ModelStep step;
    step.run = st_->keys.run_key(ctx);
    step.step = st_->keys.next_step(step.run);
    step.agent = ctx.agent_path;
    step.request = request_json(request);
    step.seq = st_->next_seq();
    return step;
  }
  std::shared_ptr<Model> inner_;
  std::shared_ptr<RecordState> st_;
};

std::vector<Middleware> with_first(Middleware first, std::vector<Middleware> chain) {
  chain.insert(chain.begin(), std::move(first));
  return chain;
}

}  // namespace

Recorder::Recorder() : state_(std::make_shared<RecordState>()) {}

void Recorder::attach(RunContext& ctx, std::vector<Middleware> chain) {
  ctx.models = models(std::move(ctx.models));
  ctx.invoker = std::make_shared<const Invoker>(with_first(middleware(), std::move(chain)));
}

ModelResolver Recorder::models(ModelResolver inner) {
  return [inner = std::move(inner), st = state_](std::string_view name) -> std::shared_ptr<Model> {
    auto model = inner ? inner(name) : nullptr;
    if (!model) return nullptr;
    return std::make_shared<RecordingModel>(std::move(model), st);
  };
}

Middleware Recorder::middleware() {
  return [st = state_](const ToolRequest& req, RunContext& ctx, const Next& next) {
    const std::string run = st->keys.run_key(ctx);
    std::string cls;
    try {
      cls = std::string(to_string(replay_class(req)));
    } catch (const ToolDefinitionError&) {
      cls = "invalid";  // recorded as is; the replay refuses the call
    }
    try {
      ToolResult result = next(req, ctx);
      st->add(run, req, cls, result_to_json(result));
      return result;
    } catch (...) {
      st->add(run, req, cls, result_to_json(ToolResult::error(failure_text(std::current_exception()))));
      throw;
    }
  };
}

Cassette Recorder::cassette() const {
  std::lock_guard lock(state_->mutex);
  return state_->cassette;
}

// ---------------------------------------------------------------- replayer

namespace detail {
struct ReplayState {
  Cassette cassette;
  ReplayOptions options;
  ReplayKeys keys;
  std::atomic<int> injected{0}, ran{0};
  std::atomic<bool> live{false};  // a step went to options.after: the run is past the cassette
};
}  // namespace detail

namespace {

class ReplayModel final : public Model {
 public:
  explicit ReplayModel(std::shared_ptr<ReplayState> st) : st_(std::move(st)) {}
  ModelResponse complete(const ModelRequest& request, RunContext& ctx) override;

 private:
  std::shared_ptr<ReplayState> st_;
};

ModelResponse ReplayModel::complete(const ModelRequest& request, RunContext& ctx) {
  const std::string run = st_->keys.run_key(ctx);
  const int n = st_->keys.next_step(run);
  const ModelStep* step = st_->cassette.find_model(run, n);
  if (!step) {
    if (st_->options.after) {
      st_->live = true;
      return st_->options.after->complete(request, ctx);
    }
    throw ReplayMismatch(where(run, n), "no such step in the cassette");
  }
  Json recorded = step->request;
  Json replayed = request_json(request);
  if (!st_->options.compare_system) {
    recorded.erase("system");
    replayed.erase("system");
  }
  if (auto d = first_difference(recorded, replayed)) {
    throw ReplayMismatch(where(run, n), (d->path.empty() ? "/" : d->path) + ": recorded " + d->a + ", replayed " + d->b);
  }
  if (!step->error.is_null()) {
    const auto code = error_code_from_string(step->error.value("code", ""));
    throw ModelError(code.value_or(ErrorCode::internal), step->error.value("message", ""));
  }
  return response_from_json(step->response);
}

}  // namespace

Replayer::Replayer(Cassette cassette, ReplayOptions options) : state_(std::make_shared<ReplayState>()) {
  state_->cassette = std::move(cassette);
  state_->options = std::move(options);
}

void Replayer::attach(RunContext& ctx, std::vector<Middleware> chain) {
  ctx.models = models();
  ctx.invoker = std::make_shared<const Invoker>(with_first(middleware(), std::move(chain)));
}

ModelResolver Replayer::models() {
  auto model = std::make_shared<ReplayModel>(state_);
  return [model](std::string_view) -> std::shared_ptr<Model> { return model; };
}

Middleware Replayer::middleware() {
  return [st = state_](const ToolRequest& req, RunContext& ctx, const Next& next) {
    const std::string run = st->keys.run_key(ctx);
    const std::string call = call_key(req);
    const auto& overrides = st->options.tool_overrides;
    auto over = overrides.find(req.call_id);
    if (over == overrides.end()) over = overrides.find(call);
    if (over != overrides.end()) {
      if (!cleared(req, ctx)) return next(req, ctx);  // the gate decides; an override is no approval
      ++st->injected;
      return over->second;
    }
    const ReplayClass cls = replay_class(req);  // a bad declaration throws: the call's error
    if (cls == ReplayClass::read_only || (cls == ReplayClass::idempotent && st->options.run_idempotent)) {
      ++st->ran;
      return next(req, ctx);
    }
    // A call awaiting a decision goes to the gate at the end of the chain,
    // which answers awaiting_approval without running it.
    if (!cleared(req, ctx)) return next(req, ctx);
    const ToolStep* step = st->cassette.find_tool(run, call);
    const Json* recorded = nullptr;
    if (step) {
      for (const Json& r : step->results) {
        if (r.value("status", "") != to_string(CallStatus::awaiting_approval)) recorded = &r;
      }
    }
    if (!recorded) {
      if (st->live) {
        ++st->ran;
        return next(req, ctx);
      }
      return ToolResult::error("replay: the cassette has no result for call '" + call + "' of " +
                               std::string(to_string(cls)) + " tool '" + req.name + "' in run " + run +
                               "; it was not run");
    }
    ++st->injected;
    return result_from_json(*recorded);
  };
}

int Replayer::injected() const { return state_->injected; }
int Replayer::ran() const { return state_->ran; }

// ---------------------------------------------------------------- fork and diff

Cassette fork(const Cassette& cassette, int step) {
  if (step < 0) throw std::invalid_argument("fork: step must be >= 0");
  const ModelStep* first = nullptr;
  for (const ModelStep& s : cassette.model_steps) {
    if (s.run.find('/') == std::string::npos && (!first || s.seq < first->seq)) first = &s;
  }
  if (!first) return cassette;
  const ModelStep* next = cassette.find_model(first->run, step + 1);
  const std::int64_t cut = next ? next->seq : std::numeric_limits<std::int64_t>::max();
  Cassette out;
  for (const ModelStep& s : cassette.model_steps) {
    if (s.seq < cut) out.model_steps.push_back(s);
  }
  for (const ToolStep& s : cassette.tool_steps) {
    if (s.seq < cut) out.tool_steps.push_back(s);
  }
  return out;
}

namespace {

void first_difference_at(const Json& a, const Json& b, const std::string& path, std::optional<StepDifference>& out) {
  if (out) return;
  if (a.type() != b.type() && !(a.is_number() && b.is_number())) {
    out = StepDifference{{}, {}, path, preview(a), preview(b)};
  } else if (a.is_object()) {
    for (auto it = a.begin(); it != a.end() && !out; ++it) {
      auto other = b.find(it.key());
      if (other == b.end()) {
        out = StepDifference{{}, {}, path + "/" + it.key(), preview(*it), "(absent)"};
      } else {
        first_difference_at(*it, *other, path + "/" + it.key(), out);
      }
    }
    for (auto it = b.begin(); it != b.end() && !out; ++it) {
      if (!a.contains(it.key())) out = StepDifference{{}, {}, path + "/" + it.key(), "(absent)", preview(*it)};
    }
  } else if (a.is_array()) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n && !out; ++i) first_difference_at(a[i], b[i], path + "/" + std::to_string(i), out);
    if (!out && a.size() != b.size()) {
      const std::string at = path + "/" + std::to_string(n);
      out = StepDifference{{}, {}, at, n < a.size() ? preview(a[n]) : "(absent)", n < b.size() ? preview(b[n]) : "(absent)"};
    }
  } else if (a != b) {
    out = StepDifference{{}, {}, path, preview(a), preview(b)};
  }
}

void compare(std::vector<StepDifference>& out, const std::string& where, const std::string& what, const Json& a,
             const Json& b) {
  if (auto d = first_difference(a, b)) {
    d->where = where;
    d->what = what;
    out.push_back(std::move(*d));
  }
}

}  // namespace

std::optional<StepDifference> first_difference(const Json& a, const Json& b) {
  std::optional<StepDifference> out;
  first_difference_at(a, b, "", out);
  return out;
}

std::vector<StepDifference> diff(const Cassette& a, const Cassette& b) {
  std::vector<StepDifference> out;
  std::map<std::pair<std::string, int>, std::pair<const ModelStep*, const ModelStep*>> models;
  for (const ModelStep& s : a.model_steps) models[{s.run, s.step}].first = &s;
  for (const ModelStep& s : b.model_steps) models[{s.run, s.step}].second = &s;
  for (const auto& entry : models) {
    const std::string at = where(entry.first.first, entry.first.second);
    const ModelStep* x = entry.second.first;
    const ModelStep* y = entry.second.second;
    if (!x || !y) {
      out.push_back({at, x ? "only in a" : "only in b", {}, {}, {}});
      continue;
    }
    const std::size_t before = out.size();
    compare(out, at, "request", x->request, y->request);
    if (out.size() == before) compare(out, at, "response", x->response, y->response);
    if (out.size() == before) compare(out, at, "error", x->error, y->error);
  }
  std::map<std::pair<std::string, std::string>, std::pair<const ToolStep*, const ToolStep*>> tools;
  for (const ToolStep& s : a.tool_steps) tools[{s.run, s.call}].first = &s;
  for (const ToolStep& s : b.tool_steps) tools[{s.run, s.call}].second = &s;
  for (const auto& entry : tools) {
    const std::string at = entry.first.first + " call " + entry.first.second;
    const ToolStep* x = entry.second.first;
    const ToolStep* y = entry.second.second;
    if (!x || !y) {
      out.push_back({at, x ? "only in a" : "only in b", {}, {}, {}});
      continue;
    }
    const std::size_t before = out.size();
    compare(out, at, "arguments", x->arguments, y->arguments);
    if (out.size() == before) compare(out, at, "result", Json(x->results), Json(y->results));
  }
  return out;
}

std::string render(const std::vector<StepDifference>& differences) {
  if (differences.empty()) return "no differences\n";
  std::string text;
  for (const StepDifference& d : differences) {
    text += d.where + " " + d.what;
    if (!d.path.empty() || !d.a.empty() || !d.b.empty()) text += " " + (d.path.empty() ? "/" : d.path) + ": a " + d.a + ", b " + d.b;
    text += "\n";
  }
  return text;
}

}  // namespace agentkit
