// The MCP server core: sessions, the JSON-RPC dispatch, tools/list and
// tools/call, approvals through elicitation, progress and cancellation.
#include <agentkit/providers/mcp_server.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include <agentkit/detail/fnv.h>
#include <agentkit/detail/logging.h>
#include <agentkit/executor.h>
#include <agentkit/invoker.h>
#include <agentkit/run_state.h>
#include <agentkit/providers/mcp.h>

#include "mcp_detail.h"

namespace agentkit::providers {
namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr const char* kIdempotencyKey = "agentkit.dev/idempotency-key";

// The one place this server turns a human's answer into an Approval: an
// elicitation the client's user accepted for exactly this call.
class ElicitedApproval final : private ApprovalIssuer {
 public:
  static Approval accepted(const ToolRequest& request) { return issue(request); }
};

// The host's ledger seen from one keyed call: its "same call again" records
// (CallLedger::recall, what the idempotent() middleware keeps within a run)
// are the key's own, so two keys with the same arguments are two calls.
class KeyedLedger final : public CallLedger {
 public:
  KeyedLedger(std::shared_ptr<const CallLedger> inner, std::string key) : inner_(std::move(inner)), key_(std::move(key)) {}
  std::optional<ToolResult> begin(const ToolRequest& request) const override { return inner_->begin(request); }
  void end(const ToolRequest& request, const ToolResult& result) const override { inner_->end(request, result); }
  std::optional<ToolResult> recall(const std::string& call) const override { return inner_->recall(key_ + '\x1f' + call); }
  void remember(const std::string& call, const ToolResult& result) const override {
    inner_->remember(key_ + '\x1f' + call, result);
  }

 private:
  std::shared_ptr<const CallLedger> inner_;
  std::string key_;
};

Json text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

Json block_of(const ContentPart& part) {
  if (const auto* text = std::get_if<TextPart>(&part)) return text_block(text->text);
  if (const auto* image = std::get_if<ImagePart>(&part)) {
    if (image->data.empty()) return text_block("[image " + image->url + "]");
    return {{"type", "image"}, {"data", base64_encode(image->data)}, {"mimeType", image->media_type}};
  }
  if (const auto* file = std::get_if<FilePart>(&part)) {
    const std::string uri = !file->url.empty() ? file->url : "file:///" + (file->name.empty() ? "attachment" : file->name);
    Json resource = {{"uri", uri}, {"mimeType", file->media_type}};
    if (file->data.empty()) return {{"type", "resource_link"}, {"uri", uri}, {"name", file->name}, {"mimeType", file->media_type}};
    resource["blob"] = base64_encode(file->data);
    return {{"type", "resource"}, {"resource", std::move(resource)}};
  }
  if (const auto* refusal = std::get_if<RefusalPart>(&part)) return text_block(refusal->text);
  return nullptr;  // reasoning is not a tool's output
}

bool object_schema(const std::optional<Schema>& schema) {
  return schema && schema->is_object() && schema->value("type", Json()) == "object";
}

// A tool's title: its spec's metadata "title", or the title an MCP server gave it.
std::string title_of(const ToolSpec& spec) {
  if (auto it = spec.metadata.find("title"); it != spec.metadata.end() && it->is_string()) return it->get<std::string>();
  if (auto it = spec.metadata.find("mcp"); it != spec.metadata.end() && it->is_object()) {
    if (auto t = it->find("title"); t != it->end() && t->is_string()) return t->get<std::string>();
  }
  return {};
}

Json tool_entry(const ToolSpec& spec) {
  Json input = Json(*spec.parameters);
  if (!input.is_object()) input = Json::object();
  if (!input.contains("type")) input["type"] = "object";
  const bool side_effecting = spec.effects.side_effecting;
  // MCP's defaults assume the worst (destructive, not idempotent); say what
  // the declaration says. A side-effecting tool is called destructive unless
  // it is idempotent: agentkit's effects do not tell additive from destructive.
  Json annotations = {{"readOnlyHint", !side_effecting},
                      {"destructiveHint", side_effecting && !spec.effects.idempotent},
                      {"idempotentHint", spec.effects.idempotent}};
  Json entry = {{"name", spec.name}, {"description", spec.description}, {"inputSchema", std::move(input)}};
  if (std::string title = title_of(spec); !title.empty()) {
    entry["title"] = title;
    annotations["title"] = title;
  }
  entry["annotations"] = std::move(annotations);
  if (object_schema(spec.output_schema)) entry["outputSchema"] = Json(*spec.output_schema);
  return entry;
}

Json call_result(const ToolResult& result, const ToolSpec& spec) {
  Json content = Json::array();
  if (!result.is_ok()) {
    content.push_back(text_block(result.text.empty() ? std::string(to_string(result.status)) : result.text));
    return {{"content", std::move(content)}, {"isError", true}};
  }
  Json out = Json::object();
  if (object_schema(spec.output_schema) && result.value.is_object()) {
    out["structuredContent"] = result.value;
    content.push_back(text_block(result.value.dump()));
  } else if (result.value.is_string()) {
    content.push_back(text_block(result.value.get<std::string>()));
  } else if (!result.value.is_null() || result.parts.empty()) {
    content.push_back(text_block(result.value.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  for (const auto& part : result.parts) {
    if (Json block = block_of(part); !block.is_null()) content.push_back(std::move(block));
  }
  out["content"] = std::move(content);
  out["isError"] = false;
  return out;
}

Json error_message(const Json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

}  // namespace

namespace detail {

struct McpServerState {
  McpServerOptions options;
  RunContext base;
  std::shared_ptr<const Invoker> invoker;
  std::shared_ptr<spdlog::logger> logger;

  std::mutex mutex;
  std::shared_ptr<const ToolRegistry> tools;
  Executor* executor = nullptr;  // null once the server is gone
  std::vector<std::weak_ptr<McpSessionState>> sessions;
};

// One tools/call in flight.
struct McpCall {
  Json id;
  std::string key;  // id.dump(): calls in flight by id
  ToolRequest request;
  RunContext ctx;
  Json progress_token;  // null: the client asked for no progress
  std::atomic<bool> cancelled{false};
  bool approval_asked = false;
  // The call's sub-run (an agent served as a tool) paused for approval of
  // calls of its own: what it awaits, and the user's decisions so far (by
  // the sub-run's call ids). Guarded by the session's mutex.
  std::shared_ptr<const NestedSuspension> nested;
  Decisions nested_decisions;
  std::mutex progress_mutex;
  double last_progress = 0;
};

struct McpSessionState : std::enable_shared_from_this<McpSessionState> {
  std::shared_ptr<McpServerState> server;
  McpSendFunction send_fn;

  mutable std::mutex mutex;
  bool closed = false;
  bool initialized = false;
  bool elicitation = false;
  std::string version;
  std::map<std::string, std::shared_ptr<McpCall>> calls;
  // One elicitation/create of ours awaiting the user: for the call itself
  // (nested_call empty), or for a call its sub-run paused for.
  struct Elicitation {
    std::shared_ptr<McpCall> call;
    std::string nested_call;
  };
  std::map<std::int64_t, Elicitation> elicitations;  // by our request id
  std::int64_t next_id = 1;
  std::deque<Json> outbox;
  std::mutex send_mutex;

  void send(Json message);
  void reply(const Json& id, Json result) { send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}); }
  void fail(const Json& id, int code, const std::string& message) { send(error_message(id, code, message)); }

  void receive(const Json& message);
  void on_request(const Json& id, const std::string& method, const Json& params);
  void on_notification(const std::string& method, const Json& params);
  void on_response(const Json& message);
  void initialize(const Json& id, const Json& params);
  void list_tools(const Json& id, const Json& params);
  void call_tool(const Json& id, const Json& params);
  void run(const std::shared_ptr<McpCall>& call);
  void submit(const std::shared_ptr<McpCall>& call);
  void ask_approval(const std::shared_ptr<McpCall>& call, const ToolResult& result);
  void ask_nested(const std::shared_ptr<McpCall>& call, std::shared_ptr<const NestedSuspension> nested);
  void elicit(std::int64_t request_id, const std::string& tool, const Json& arguments, const std::string& asked_by);
  void decide_nested(const std::shared_ptr<McpCall>& call, const std::string& nested_call, Decision decision);
  void finish(const std::shared_ptr<McpCall>& call, const ToolResult& result);
  void progress(McpCall& call, std::optional<double> value, std::optional<double> total, std::string message);
  void close();
};

namespace {

// Forwards a call's events to the base context's observer and turns its
// progress into notifications/progress.
class CallObserver final : public Observer {
 public:
  CallObserver(std::weak_ptr<McpSessionState> session, std::weak_ptr<McpCall> call, std::shared_ptr<Observer> inner)
      : session_(std::move(session)), call_(std::move(call)), inner_(std::move(inner)) {}

  void on_event(const Event& event) override {
    if (inner_) inner_->on_event(event);
    auto session = session_.lock();
    auto call = call_.lock();
    if (!session || !call || call->progress_token.is_null()) return;
    if (const auto* p = std::get_if<Progress>(&event)) {
      session->progress(*call, std::nullopt, std::nullopt, p->message);
    } else if (const auto* m = std::get_if<McpProgress>(&event)) {
      session->progress(*call, m->progress, m->total, m->message);
    } else if (const auto* s = std::get_if<ToolCallStarted>(&event)) {
      session->progress(*call, std::nullopt, std::nullopt, s->status.empty() ? s->call.name : s->status);
    }
  }

 private:
  std::weak_ptr<McpSessionState> session_;
  std::weak_ptr<McpCall> call_;
  std::shared_ptr<Observer> inner_;
};

}  // namespace

void McpSessionState::send(Json message) {
  {
    std::lock_guard lock(mutex);
    if (closed) return;
    if (server->options.deliver_on_poll) {
      outbox.push_back(std::move(message));
      return;
    }
  }
  std::lock_guard lock(send_mutex);
  try {
    send_fn(message);
  } catch (const std::exception& e) {
    server->logger->warn("mcp server: sending a message failed: {}", e.what());
  }
}

void McpSessionState::receive(const Json& message) {
  if (!message.is_object()) return fail(nullptr, kInvalidRequest, "a JSON-RPC message must be an object");
  const auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  const Json id = has_id ? *id_it : Json();
  if (has_id && !id.is_string() && !id.is_number_integer()) {
    return fail(nullptr, kInvalidRequest, "id must be a string or an integer");
  }
  if (message.value("jsonrpc", Json()) != "2.0") return fail(id, kInvalidRequest, "jsonrpc must be \"2.0\"");
  const auto method = message.find("method");
  if (method == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) return on_response(message);
    return fail(id, kInvalidRequest, "not a request, a notification or a response");
  }
  if (!method->is_string()) return fail(id, kInvalidRequest, "method must be a string");
  Json params = message.value("params", Json());
  if (params.is_null()) params = Json::object();
  if (!params.is_object()) {
    if (has_id) fail(id, kInvalidParams, "params must be an object");
    return;
  }
  if (!has_id) return on_notification(method->get<std::string>(), params);
  on_request(id, method->get<std::string>(), params);
}

void McpSessionState::on_request(const Json& id, const std::string& method, const Json& params) {
  if (method == "ping") return reply(id, Json::object());
  if (method == "initialize") return initialize(id, params);
  bool ready = false;
  {
    std::lock_guard lock(mutex);
    ready = initialized;
  }
  if (!ready) return fail(id, kInvalidRequest, "the session is not initialized: send initialize first");
  if (method == "tools/list") return list_tools(id, params);
  if (method == "tools/call") return call_tool(id, params);
  fail(id, kMethodNotFound, "Method not found: " + mcp_detail::preview_text(method, 80));
}

void McpSessionState::initialize(const Json& id, const Json& params) {
  const auto requested = params.find("protocolVersion");
  if (requested == params.end() || !requested->is_string()) {
    return fail(id, kInvalidParams, "initialize needs params.protocolVersion (a string)");
  }
  const auto& supported = mcp_supported_versions();
  const bool known = std::find(supported.begin(), supported.end(), requested->get<std::string>()) != supported.end();
  const std::string version = known ? requested->get<std::string>() : std::string(kMcpProtocolVersion);
  // Elicitation: {} (form mode, the only one before 2025-11-25) or {"form": ...}.
  const Json caps = params.value("capabilities", Json::object());
  const Json elicit = caps.is_object() ? caps.value("elicitation", Json()) : Json();
  const bool form = elicit.is_object() && (elicit.empty() || elicit.contains("form"));
  bool again = false;
  {
    std::lock_guard lock(mutex);
    again = initialized;
    if (!again) {
      initialized = true;
      this->version = version;
      elicitation = form;
    }
  }
  if (again) return fail(id, kInvalidRequest, "the session is already initialized");
  Json info = {{"name", server->options.name}, {"version", server->options.version}};
  if (!server->options.title.empty()) info["title"] = server->options.title;
  Json result = {{"protocolVersion", version},
                 {"capabilities", {{"tools", {{"listChanged", true}}}}},
                 {"serverInfo", std::move(info)}};
  if (!server->options.instructions.empty()) result["instructions"] = server->options.instructions;
  reply(id, std::move(result));
}

void McpSessionState::list_tools(const Json& id, const Json& params) {
  std::size_t offset = 0;
  if (auto cursor = params.find("cursor"); cursor != params.end() && !cursor->is_null()) {
    const std::string text = cursor->is_string() ? cursor->get<std::string>() : std::string();
    const bool digits = !text.empty() && text.size() < 10 &&
                        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return fail(id, kInvalidParams, "invalid cursor");
    offset = std::stoul(text);
  }
  std::shared_ptr<const ToolRegistry> tools;
  {
    std::lock_guard lock(server->mutex);
    tools = server->tools;
  }
  const auto specs = tools->schemas();
  if (offset > specs.size()) return fail(id, kInvalidParams, "invalid cursor");
  const std::size_t page = std::max<std::size_t>(1, server->options.page_size);
  const std::size_t end = std::min(specs.size(), offset + page);
  Json list = Json::array();
  for (std::size_t i = offset; i < end; ++i) list.push_back(tool_entry(*specs[i]));
  Json result = {{"tools", std::move(list)}};
  if (end < specs.size()) result["nextCursor"] = std::to_string(end);
  reply(id, std::move(result));
}

void McpSessionState::call_tool(const Json& id, const Json& params) {
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) return fail(id, kInvalidParams, "tools/call needs params.name (a string)");
  ToolPtr tool;
  {
    std::lock_guard lock(server->mutex);
    tool = server->tools->find(name->get<std::string>());
  }
  if (!tool || !tool->advertised()) {
    return fail(id, kInvalidParams, "Unknown tool: " + mcp_detail::preview_text(name->get<std::string>(), 80));
  }
  auto call = std::make_shared<McpCall>();
  call->id = id;
  call->key = id.dump();
  call->request.call_id = RunContext::new_id("mcp");
  call->request.name = tool->name();
  call->request.arguments = params.contains("arguments") && !params["arguments"].is_null() ? params["arguments"] : Json::object();
  call->request.tool = tool;
  // The call's key: an agent served as a tool runs a durable sub-run under
  // it (with a store), so its approvals can be asked for and the sub-run resumed.
  call->request.ledger_key = call->request.call_id;
  const RunContext& base = server->base;
  std::string correlation = RunContext::new_id("mcp");
  if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    const Json token = meta->value("progressToken", Json());
    if (token.is_string() || token.is_number_integer()) call->progress_token = token;
    if (auto key = meta->find(kIdempotencyKey); key != meta->end()) {
      if (!key->is_string() || key->get_ref<const std::string&>().empty() || key->get_ref<const std::string&>().size() > 256) {
        return fail(id, kInvalidParams, std::string("_meta.") + kIdempotencyKey + " must be a string of 1 to 256 bytes");
      }
      if (!server->options.ledger) {
        return fail(id, kInvalidParams, std::string("this server keeps no call records: _meta.") + kIdempotencyKey +
                                            " cannot be honoured");
      }
      // The same key, tool and arguments (in the same tenant) are the same
      // call: the same record, and the same sub-run for an agent.
      const std::string same = "key-" + agentkit::detail::fnv1a_hex(base.scope.key() + '\x1f' + tool->name() + '\x1f' +
                                                          key->get<std::string>() + '\x1f' +
                                                          canonical_dump(call->request.arguments));
      call->request.ledger = std::make_shared<KeyedLedger>(server->options.ledger, same);
      call->request.ledger_key = same;
      correlation = "mcp-" + same;
    }
  }
  try {
    call->ctx = base.child();
  } catch (const std::exception& e) {
    return reply(id, call_result(ToolResult::error(e.what()), tool->spec()));
  }
  call->ctx.correlation_id = std::move(correlation);
  call->ctx.cancellation = base.cancellation.child();
  call->ctx.invoker = server->invoker;
  call->ctx.events = nullptr;
  call->ctx.observer = std::make_shared<CallObserver>(weak_from_this(), call, base.observer);
  call->ctx.refresh_event_source();
  bool duplicate = false;
  {
    std::lock_guard lock(mutex);
    if (closed) return;
    duplicate = !calls.emplace(call->key, call).second;
  }
  if (duplicate) return fail(id, kInvalidRequest, "request id " + mcp_detail::preview_text(call->key, 80) + " is already in flight");
  submit(call);
}

void McpSessionState::submit(const std::shared_ptr<McpCall>& call) {
  Executor* executor = nullptr;
  {
    std::lock_guard lock(server->mutex);
    executor = server->executor;
  }
  if (!executor) return finish(call, ToolResult::error("the server is shutting down"));
  auto self = shared_from_this();
  executor->submit([self, call] { self->run(call); });
}

void McpSessionState::run(const std::shared_ptr<McpCall>& call) {
  if (call->cancelled) return finish(call, ToolResult::error("cancelled"));
  ToolResult result;
  try {
    call->request.tool->check_arguments(call->request.arguments);
    if (auto spent = call->ctx.budget ? call->ctx.budget->exhausted(1) : std::nullopt) {
      result = ToolResult::error("budget exhausted: " + *spent);
    } else {
      result = server->invoker->invoke_tool(call->request, call->ctx);
    }
  } catch (...) {
    result = ToolResult::error(failure_text(std::current_exception()));
  }
  if (result.status == CallStatus::awaiting_approval) return ask_approval(call, result);
  finish(call, result);
}

void McpSessionState::ask_approval(const std::shared_ptr<McpCall>& call, const ToolResult& result) {
  const std::string& tool = call->request.name;
  if (result.nested) return ask_nested(call, result.nested);
  std::int64_t request_id = 0;
  {
    std::lock_guard lock(mutex);
    if (call->approval_asked || !elicitation) {
      request_id = -1;
    } else {
      call->approval_asked = true;
      request_id = next_id++;
      elicitations.emplace(request_id, Elicitation{call, {}});
    }
  }
  if (request_id < 0) {
    return finish(call, ToolResult::error("Tool '" + tool +
                                          "' needs a human's approval before it runs, and this client cannot be "
                                          "asked (it did not declare the elicitation capability); it was not run"));
  }
  elicit(request_id, tool, call->request.arguments, {});
}

void McpSessionState::ask_nested(const std::shared_ptr<McpCall>& call, std::shared_ptr<const NestedSuspension> nested) {
  const std::string& tool = call->request.name;
  std::vector<std::int64_t> ids;
  {
    std::lock_guard lock(mutex);
    if (elicitation && !nested->pending.empty()) {
      call->nested = nested;
      call->nested_decisions.clear();
      for (const ToolCall& pending : nested->pending) {
        ids.push_back(next_id++);
        elicitations.emplace(ids.back(), Elicitation{call, pending.id});
      }
    }
  }
  if (ids.empty()) {
    return finish(call, ToolResult::error("Tool '" + tool + "' paused for approval of calls of its own (its run " +
                                          nested->run_id + " is kept, suspended), and this client cannot be asked (it "
                                          "did not declare the elicitation capability); it did not complete"));
  }
  // One question per call, each naming the agent that asks.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const ToolCall& pending = nested->pending[i];
    const std::string agent = i < nested->agents.size() ? nested->agents[i] : std::string();
    elicit(ids[i], pending.name, pending.arguments,
           "agent " + (agent.empty() ? std::string("?") : agent) + ", inside tool '" + tool + "'");
  }
}

void McpSessionState::elicit(std::int64_t request_id, const std::string& tool, const Json& arguments,
                             const std::string& asked_by) {
  std::string message = server->options.approval_prompt + "\nTool: " + tool +
                        "\nArguments: " + arguments.dump(2, ' ', false, Json::error_handler_t::replace);
  if (!asked_by.empty()) message += "\nAsked by: " + asked_by;
  send({{"jsonrpc", "2.0"},
        {"id", request_id},
        {"method", "elicitation/create"},
        {"params", {{"message", message}, {"requestedSchema", {{"type", "object"}, {"properties", Json::object()}}}}}});
}

void McpSessionState::on_response(const Json& message) {
  const Json& id = message["id"];
  std::optional<Elicitation> asked;
  if (id.is_number_integer()) {
    std::lock_guard lock(mutex);
    if (auto it = elicitations.find(id.get<std::int64_t>()); it != elicitations.end()) {
      asked = std::move(it->second);
      elicitations.erase(it);
    }
  }
  if (!asked) {
    server->logger->debug("mcp server: dropping a response to no request of ours: id {}", preview(id));
    return;
  }
  const auto& call = asked->call;
  const Json result = message.value("result", Json());
  const std::string action = result.is_object() ? result.value("action", std::string()) : std::string();
  const std::string why = message.contains("error") ? "the client could not ask the user"
                                                    : "the user " + (action.empty() ? std::string("gave no answer") : action + "d");
  if (!asked->nested_call.empty()) {
    return decide_nested(call, asked->nested_call, action == "accept" ? Decision::approve() : Decision::reject(why));
  }
  if (action != "accept") {
    return finish(call, ToolResult::denied("denied: tool '" + call->request.name + "' was not run (" + why + ")"));
  }
  call->request.approval = ElicitedApproval::accepted(call->request);
  submit(call);
}

// Once every call the sub-run paused for is decided, the call runs again
// with the decisions routed down (RunContext::resuming): the sub-run resumes
// from its checkpoint, and may pause again for more.
void McpSessionState::decide_nested(const std::shared_ptr<McpCall>& call, const std::string& nested_call,
                                    Decision decision) {
  std::shared_ptr<NestedSuspension> decided;
  {
    std::lock_guard lock(mutex);
    if (!call->nested) return;
    call->nested_decisions.insert_or_assign(nested_call, std::move(decision));
    if (call->nested_decisions.size() < call->nested->pending.size()) return;
    decided = std::make_shared<NestedSuspension>(*call->nested);
    decided->decided = true;
    decided->decisions = std::move(call->nested_decisions);
    call->nested = nullptr;
    call->nested_decisions.clear();
  }
  call->ctx.resuming = std::move(decided);
  submit(call);
}

void McpSessionState::on_notification(const std::string& method, const Json& params) {
  if (method == "notifications/initialized") return;
  if (method == "notifications/cancelled") {
    const Json id = params.value("requestId", Json());
    if (!id.is_string() && !id.is_number_integer()) return;
    std::shared_ptr<McpCall> call;
    {
      std::lock_guard lock(mutex);
      auto it = calls.find(id.dump());
      if (it == calls.end()) return;
      call = it->second;
      call->cancelled = true;
      // A call waiting for a human ends here; a running one ends when its tool returns.
      const auto waiting = std::erase_if(elicitations, [&](const auto& e) { return e.second.call == call; });
      if (waiting > 0) calls.erase(it);
    }
    call->ctx.cancellation.cancel();
    return;
  }
  server->logger->debug("mcp server: ignoring notification {}", mcp_detail::preview_text(method, 80));
}

void McpSessionState::progress(McpCall& call, std::optional<double> value, std::optional<double> total,
                               std::string message) {
  Json params;
  {
    std::lock_guard lock(call.progress_mutex);
    // Progress must increase with every notification.
    const bool rises = value && *value > call.last_progress;
    call.last_progress = rises ? *value : call.last_progress + 1;
    params = {{"progressToken", call.progress_token}, {"progress", call.last_progress}};
    if (rises && total) params["total"] = *total;
    if (!message.empty()) params["message"] = std::move(message);
  }
  if (call.cancelled) return;
  send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", std::move(params)}});
}

void McpSessionState::finish(const std::shared_ptr<McpCall>& call, const ToolResult& result) {
  {
    std::lock_guard lock(mutex);
    if (auto it = calls.find(call->key); it != calls.end() && it->second == call) calls.erase(it);
  }
  if (call->cancelled) return;  // the spec: no response to a cancelled request
  reply(call->id, call_result(result, call->request.tool->spec()));
}

void McpSessionState::close() {
  std::map<std::string, std::shared_ptr<McpCall>> running;
  {
    std::lock_guard lock(mutex);
    closed = true;
    running.swap(calls);
    elicitations.clear();
    outbox.clear();
  }
  for (auto& entry : running) {
    entry.second->cancelled = true;
    entry.second->ctx.cancellation.cancel();
  }
}

}  // namespace detail

// ------------------------------------------------------------------ session

void McpServerSession::receive(const Json& message) { state_->receive(message); }

void McpServerSession::parse_error(const std::string& problem) {
  state_->fail(nullptr, kParseError, "Parse error: the message " + problem);
}

std::size_t McpServerSession::poll() {
  std::deque<Json> ready;
  {
    std::lock_guard lock(state_->mutex);
    ready.swap(state_->outbox);
  }
  std::lock_guard lock(state_->send_mutex);
  for (const auto& message : ready) {
    try {
      state_->send_fn(message);
    } catch (const std::exception& e) {
      state_->server->logger->warn("mcp server: sending a message failed: {}", e.what());
    }
  }
  return ready.size();
}

bool McpServerSession::initialized() const {
  std::lock_guard lock(state_->mutex);
  return state_->initialized;
}

std::string McpServerSession::protocol_version() const {
  std::lock_guard lock(state_->mutex);
  return state_->version;
}

std::size_t McpServerSession::calls_in_flight() const {
  std::lock_guard lock(state_->mutex);
  return state_->calls.size();
}

std::optional<Json> McpServerSession::origin_of(const Json& server_request_id) const {
  if (!server_request_id.is_number_integer()) return std::nullopt;
  std::lock_guard lock(state_->mutex);
  const auto it = state_->elicitations.find(server_request_id.get<std::int64_t>());
  if (it == state_->elicitations.end()) return std::nullopt;
  return it->second.call->id;
}

void McpServerSession::close() { state_->close(); }

// ------------------------------------------------------------------- server

McpServer::McpServer(ToolRegistry tools, RunContext base, McpServerOptions options)
    : state_(std::make_shared<detail::McpServerState>()) {
  state_->logger = agentkit::detail::logger_or_null(options.logger);
  state_->invoker = base.invoker ? base.invoker : std::make_shared<const Invoker>(default_middleware());
  if (base.executor && !base.executor->inline_execution()) {
    state_->executor = base.executor.get();
  } else {
    pool_ = std::make_shared<ThreadPoolExecutor>(std::max<std::size_t>(1, options.threads), options.logger);
    state_->executor = pool_.get();
  }
  state_->tools = std::make_shared<const ToolRegistry>(std::move(tools));
  state_->base = std::move(base);
  state_->options = std::move(options);
}

McpServer::~McpServer() {
  std::vector<std::weak_ptr<detail::McpSessionState>> sessions;
  {
    std::lock_guard lock(state_->mutex);
    sessions.swap(state_->sessions);
    state_->executor = nullptr;
  }
  for (auto& weak : sessions) {
    if (auto session = weak.lock()) session->close();
  }
  pool_.reset();  // joins the workers once the (cancelled) calls return
}

std::shared_ptr<McpServerSession> McpServer::open_session(McpSendFunction send) {
  auto session = std::make_shared<detail::McpSessionState>();
  session->server = state_;
  session->send_fn = std::move(send);
  {
    std::lock_guard lock(state_->mutex);
    std::erase_if(state_->sessions, [](const auto& weak) { return weak.expired(); });
    state_->sessions.push_back(session);
  }
  return std::shared_ptr<McpServerSession>(new McpServerSession(std::move(session)));
}

void McpServer::set_tools(ToolRegistry tools) {
  std::vector<std::shared_ptr<detail::McpSessionState>> live;
  {
    std::lock_guard lock(state_->mutex);
    state_->tools = std::make_shared<const ToolRegistry>(std::move(tools));
    for (auto& weak : state_->sessions) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  for (auto& session : live) {
    bool ready = false;
    {
      std::lock_guard lock(session->mutex);
      ready = session->initialized && !session->closed;
    }
    if (ready) session->send({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
  }
}

}  // namespace agentkit::providers
