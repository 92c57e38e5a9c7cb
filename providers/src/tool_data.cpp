#include <agentkit/providers/tool_data.h>

#include <cmath>
#include <mutex>

#include <agentkit/detail/enum_table.h>
#include <agentkit/errors.h>
#include <agentkit/url.h>

namespace agentkit::providers {
namespace {

using std::chrono::milliseconds;

constexpr EnumValue<ParamType> kParamTypes[] = {
    {ParamType::string, "string"},   {ParamType::integer, "integer"}, {ParamType::number, "number"},
    {ParamType::boolean, "boolean"}, {ParamType::array, "array"},     {ParamType::object, "object"}};
constexpr EnumValue<ParamIn> kParamIns[] = {{ParamIn::path, "path"}, {ParamIn::query, "query"}, {ParamIn::body, "body"}};

template <class E, std::size_t N>
std::optional<E> one_of(const ToolDataReader& r, std::string_view key, const EnumValue<E> (&choices)[N]) {
  const auto text = r.get<std::string>(key);
  if (!text) return std::nullopt;
  if (auto value = agentkit::detail::enum_parse(choices, *text)) return *value;
  std::string names;
  for (const auto& choice : choices) names += (names.empty() ? "" : ", ") + std::string(choice.text);
  r.fail(key, "must be one of " + names + ", not '" + *text + "'");
}

// Seconds as JSON: an integer when whole, so `10` saves as `10`.
Json seconds(milliseconds value) {
  if (value.count() % 1000 == 0) return value.count() / 1000;
  return static_cast<double>(value.count()) / 1000.0;
}

Json pairs_to_json(const std::vector<std::pair<std::string, std::string>>& pairs) {
  Json out = Json::object();
  for (const auto& pair : pairs) out[pair.first] = pair.second;
  return out;
}

// An approval rule, parsed now: a syntax error names the rule's path.
Condition rule_at(const Json& value, const std::string& path) {
  if (!value.is_string()) ToolDataReader::fail_at(path, "must be a rule (a string), not " + ToolDataReader::shown(value));
  try {
    return Condition::parse(value.get<std::string>());
  } catch (const ConditionSyntaxError& e) {
    std::string problem = e.what();  // "approve_if: at column 13: ..."
    if (problem.starts_with("approve_if: ")) problem.erase(0, 12);
    ToolDataReader::fail_at(path, problem);
  }
}

RestParam param_from_json(const Json& body, const std::string& path, const RestToolDefinition& def) {
  const ToolDataReader r(body, path, {"name", "in", "description", "type", "items", "required", "default", "enum"});
  RestParam param;
  param.name = r.required<std::string>("name");
  param.description = r.required<std::string>("description");
  const bool in_url = def.url.find("{" + param.name + "}") != std::string::npos;
  const bool bodyless = def.method == "GET" || def.method == "HEAD" || def.method == "DELETE";
  param.in = one_of(r, "in", kParamIns).value_or(in_url ? ParamIn::path : bodyless ? ParamIn::query : ParamIn::body);
  param.options.type = one_of(r, "type", kParamTypes).value_or(ParamType::string);
  param.options.items = one_of(r, "items", kParamTypes).value_or(ParamType::string);
  param.options.required = r.get_or<bool>("required", true);
  if (r.has("default")) param.options.default_value = r.value("default");
  if (r.has("enum")) {
    if (!r.value("enum").is_array()) r.fail("enum", "must be a list of values, not " + ToolDataReader::shown(r.value("enum")));
    param.options.allowed.assign(r.value("enum").begin(), r.value("enum").end());
  }
  return param;
}

Json param_to_json(const RestParam& p) {
  Json out = {{"name", p.name},
              {"in", std::string(agentkit::detail::enum_text(kParamIns, p.in))},
              {"description", p.description},
              {"type", std::string(agentkit::detail::enum_text(kParamTypes, p.options.type))},
              {"required", p.options.required}};
  if (p.options.type == ParamType::array) out["items"] = std::string(agentkit::detail::enum_text(kParamTypes, p.options.items));
  if (p.options.default_value) out["default"] = *p.options.default_value;
  if (!p.options.allowed.empty()) out["enum"] = p.options.allowed;
  return out;
}

// `text` with each ${NAME} replaced from the environment; an unset or empty
// variable is an error naming it (never a value).
std::string names_of(const std::vector<ToolPtr>& tools) {
  std::string out;
  for (const auto& tool : tools) out += (out.empty() ? "" : ", ") + tool->name();
  return out.empty() ? "none" : out;
}

}  // namespace

// -------------------------------------------------------------------- rest

Json rest_to_json(const RestToolDefinition& d) {
  if (d.approval_when && d.approve_if.empty()) {
    throw ToolDataError("", "REST tool '" + d.name +
                                "' has an approval rule written in C++; only a rule given as text (approve_if) can "
                                "be saved",
                        ErrorCode::unimplemented);
  }
  Json out = {{"name", d.name},
              {"description", d.description},
              {"method", d.method},
              {"url", d.url},
              {"side_effecting", d.side_effecting.value_or(true)},
              {"idempotent", d.idempotent},
              {"requires_approval", d.requires_approval},
              {"timeout_s", seconds(d.timeout)},
              {"retries", d.retries},
              {"retry_delay_s", seconds(d.retry_delay)},
              {"max_retry_delay_s", seconds(d.max_retry_delay)},
              {"max_redirects", d.max_redirects},
              {"max_response_bytes", d.max_response_bytes}};
  if (!d.approve_if.empty()) out["approve_if"] = d.approve_if;
  if (!d.tags.empty()) out["tags"] = d.tags;
  if (!d.headers.empty()) out["headers"] = pairs_to_json(d.headers);
  if (!d.params.empty()) {
    out["params"] = Json::array();
    for (const auto& p : d.params) out["params"].push_back(param_to_json(p));
  }
  return out;
}

RestToolDefinition rest_from_json(const Json& body, const std::string& path) {
  const ToolDataReader r(body, path,
                         {"name", "description", "method", "url", "side_effecting", "idempotent", "requires_approval",
                          "approve_if", "tags", "params", "headers", "timeout_s", "retries", "retry_delay_s",
                          "max_retry_delay_s", "max_redirects", "max_response_bytes"});
  RestToolDefinition def;
  def.name = r.required<std::string>("name");
  def.description = r.required<std::string>("description");
  def.method = r.get_or<std::string>("method", "GET");
  def.url = r.required<std::string>("url");
  if (!r.has("side_effecting")) {
    r.fail_at(r.path(), "missing required key 'side_effecting' (true if the call changes anything; a GET is not "
                        "assumed read-only)");
  }
  def.side_effecting = r.get<bool>("side_effecting");
  def.idempotent = r.get_or<bool>("idempotent", false);
  def.requires_approval = r.get_or<bool>("requires_approval", false);
  if (r.has("approve_if")) {
    def.approval_when = rule_at(r.value("approve_if"), r.path("approve_if")).approval_rule();
    def.approve_if = r.value("approve_if").get<std::string>();
  }
  def.tags = r.get_or<std::vector<std::string>>("tags", {});
  def.headers = r.get_or<Headers>("headers", {});
  def.timeout = r.get_or<milliseconds>("timeout_s", def.timeout);
  def.retries = r.get_or<int>("retries", def.retries);
  def.retry_delay = r.get_or<milliseconds>("retry_delay_s", def.retry_delay);
  def.max_retry_delay = r.get_or<milliseconds>("max_retry_delay_s", def.max_retry_delay);
  def.max_redirects = r.get_or<int>("max_redirects", def.max_redirects);
  def.max_response_bytes = static_cast<std::size_t>(r.get_or<int>("max_response_bytes", 1 << 20));
  if (r.has("params")) {
    const Json& params = r.value("params");
    if (!params.is_array()) r.fail("params", "must be a list, not " + ToolDataReader::shown(params));
    for (std::size_t i = 0; i < params.size(); ++i) {
      def.params.push_back(param_from_json(params[i], r.path("params") + "/" + std::to_string(i), def));
    }
  }
  return def;
}

// --------------------------------------------------------------------- mcp

Json mcp_to_json(const McpServerEntry& s) {
  Json out = {{"name", s.name}, {"timeout_s", seconds(s.timeout)}};
  if (s.stdio) {
    out["command"] = s.stdio->command;
    if (!s.stdio->args.empty()) out["args"] = s.stdio->args;
    if (!s.stdio->env.empty()) out["env"] = pairs_to_json(s.stdio->env);
    if (!s.stdio->inherit_env.empty()) out["inherit_env"] = s.stdio->inherit_env;
    if (!s.stdio->working_directory.empty()) out["cwd"] = s.stdio->working_directory;
  } else if (s.http) {
    out["url"] = s.http->url;
    if (!s.http->headers.empty()) out["headers"] = pairs_to_json(s.http->headers);
  }
  if (!s.filter.include.empty()) out["include"] = s.filter.include;
  if (!s.filter.exclude.empty()) out["exclude"] = s.filter.exclude;
  if (!s.requires_approval.empty()) out["requires_approval"] = s.requires_approval;
  if (!s.approve_if.empty()) {
    out["approve_if"] = Json::object();
    for (const auto& rule : s.approve_if) out["approve_if"][rule.first] = rule.second.text();
  }
  return out;
}

McpServerEntry mcp_from_json(const Json& body, const std::string& path) {
  const ToolDataReader r(body, path,
                         {"name", "command", "args", "env", "inherit_env", "cwd", "url", "headers", "timeout_s",
                          "include", "exclude", "requires_approval", "approve_if"});
  McpServerEntry server;
  server.name = r.required<std::string>("name");
  if (server.name.empty()) r.fail("name", "must not be empty");
  if (r.has("command") == r.has("url")) {
    r.fail_at(r.path(), "needs exactly one of 'command' (a stdio server) and 'url' (Streamable HTTP)");
  }
  if (r.has("command")) {
    if (r.has("headers")) r.fail("headers", "is for an HTTP server ('url'), not a stdio one");
    McpStdioServer stdio;
    stdio.command = r.required<std::string>("command");
    stdio.args = r.get_or<std::vector<std::string>>("args", {});
    stdio.env = r.get_or<Headers>("env", {});
    stdio.inherit_env = r.get_or<std::vector<std::string>>("inherit_env", {});
    stdio.working_directory = r.get_or<std::string>("cwd", {});
    server.stdio = std::move(stdio);
  } else {
    for (const char* key : {"args", "env", "inherit_env", "cwd"}) {
      if (r.has(key)) r.fail(key, "is for a stdio server ('command'), not an HTTP one");
    }
    McpHttpServer http;
    http.url = r.required<std::string>("url");
    try {
      parse_url(http.url);
    } catch (const UrlError& e) {
      r.fail("url", std::string("is not a usable URL: ") + e.what());
    }
    http.headers = r.get_or<Headers>("headers", {});
    server.http = std::move(http);
  }
  server.timeout = r.get_or<milliseconds>("timeout_s", server.timeout);
  server.filter.include = r.get_or<std::vector<std::string>>("include", {});
  server.filter.exclude = r.get_or<std::vector<std::string>>("exclude", {});
  if (r.has("requires_approval")) {
    if (r.value("requires_approval").is_boolean()) {
      if (r.value("requires_approval").get<bool>()) server.requires_approval = {"*"};
    } else if (!r.value("requires_approval").is_array()) {
      r.fail("requires_approval", "must be true, false or a list of tool name patterns, not " +
                                      ToolDataReader::shown(r.value("requires_approval")));
    } else {
      server.requires_approval = r.get<std::vector<std::string>>("requires_approval").value();
    }
  }
  if (r.has("approve_if")) {
    const Json& rules = r.value("approve_if");
    if (!rules.is_object()) {
      r.fail("approve_if", "must map tool names (or patterns) to rules, not " + ToolDataReader::shown(rules));
    }
    for (const auto& item : rules.items()) {
      server.approve_if.emplace_back(item.key(), rule_at(item.value(), r.path("approve_if") + "/" + item.key()));
    }
  }
  return server;
}

std::vector<ToolPtr> mcp_server_tools(const McpServerEntry& server, const std::vector<ToolPtr>& offered) {
  const auto check = [&](const std::string& what, const std::string& pattern, const std::vector<ToolPtr>& among,
                         const char* which) {
    if (!filter_tools(among, {.include = {pattern}}).empty()) return;
    throw ToolDataError("", "MCP server '" + server.name + "': " + what + " '" + pattern + "' names none of " + which +
                                " (" + names_of(among) + ")");
  };
  for (const auto& pattern : server.filter.include) check("include", pattern, offered, "its tools");
  std::vector<ToolPtr> tools = filter_tools(offered, server.filter);
  for (const auto& pattern : server.requires_approval) {
    check("requires_approval", pattern, tools, "the tools the agent gets");
  }
  for (const auto& rule : server.approve_if) check("approve_if", rule.first, tools, "the tools the agent gets");
  for (auto& tool : tools) {
    if (matches_any(server.requires_approval, tool->name())) tool = with_approval(tool);
    for (const auto& rule : server.approve_if) {
      if (matches_any({rule.first}, tool->name())) tool = with_approval(tool, rule.second.approval_rule());
    }
  }
  return tools;
}

// ------------------------------------------------------------------- kinds

void register_rest_kind(ToolCatalog& catalog) {
  catalog.add_kind(
      {.name = "rest",
       .load = [](const Json& body, const std::string& path, const ToolCatalog&) -> std::vector<ToolPtr> {
         RestToolDefinition def = rest_from_json(body, path);
         try {
           return {std::make_shared<const RestTool>(std::move(def))};
         } catch (const ToolDefinitionError& e) {
           ToolDataReader::fail_at(path, e.what());
         }
       },
       .save = [](const Tool& tool, const ToolCatalog&) -> std::optional<Json> {
         const auto* rest = dynamic_cast<const RestTool*>(&tool);
         if (!rest) return std::nullopt;
         return rest_to_json(rest->definition());
       }});
}

void register_mcp_kind(ToolCatalog& catalog, McpKindOptions options) {
  // The connections live as long as the kind, i.e. the catalog.
  struct Connections {
    std::mutex mutex;
    std::vector<std::unique_ptr<McpClient>> clients;
  };
  auto connections = std::make_shared<Connections>();
  catalog.add_kind(
      {.name = "mcp",
       .load = [connections, options](const Json& body, const std::string& path,
                                      const ToolCatalog&) -> std::vector<ToolPtr> {
         const McpServerEntry server = mcp_from_json(body, path);
         std::unique_ptr<McpTransport> transport;
         if (server.stdio) {
           McpStdioServer stdio = *server.stdio;
           for (auto& pair : stdio.env) pair.second = expand_env(pair.second, path + "/env/" + pair.first);
           transport = make_stdio_transport(std::move(stdio), options.logger);
         } else {
           McpHttpServer http = *server.http;
           for (auto& pair : http.headers) pair.second = expand_env(pair.second, path + "/headers/" + pair.first);
           transport = make_http_transport(std::move(http), options.logger);
         }
         auto client = std::make_unique<McpClient>(
             std::move(transport),
             McpClientOptions{.server_name = server.name, .request_timeout = server.timeout, .logger = options.logger});
         try {
           client->connect();
         } catch (const std::exception& e) {
           throw ToolDataError(path, "MCP server '" + server.name + "' is not usable: " + e.what(),
                               ErrorCode::unavailable);
         }
         std::vector<ToolPtr> tools;
         try {
           tools = mcp_server_tools(server, client->tools());
         } catch (const ToolDataError& e) {
           throw ToolDataError(path, e.problem());
         }
         for (auto& tool : tools) {
           tool = renamed(tool, server.name + "_" + tool->name(), {{"plugin", server.name}, {"local_name", tool->name()}});
         }
         const std::lock_guard lock(connections->mutex);
         connections->clients.push_back(std::move(client));
         return tools;
       }});
}

void register_provider_kinds(ToolCatalog& catalog) {
  register_rest_kind(catalog);
  register_mcp_kind(catalog);
}

}  // namespace agentkit::providers
