#include <agentkit/model.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace agentkit {
namespace {

constexpr std::array<std::pair<ReasoningEffort, std::string_view>, 4> kEfforts{{
    {ReasoningEffort::minimal, "minimal"},
    {ReasoningEffort::low, "low"},
    {ReasoningEffort::medium, "medium"},
    {ReasoningEffort::high, "high"},
}};

// The body keys an adapter writes from the request itself.
constexpr std::array<std::string_view, 6> kCoreKeys{"messages", "model", "stream", "stream_options", "system", "tools"};

constexpr std::array<std::string_view, 10> kFields{"extra",   "max_output_tokens", "parallel_tool_calls",
                                                   "reasoning_effort", "seed", "stop", "temperature",
                                                   "thinking_budget_tokens", "tool_choice", "top_p"};

// Objects merge key by key; anything else replaces.
void deep_merge(Json& into, const Json& over) {
  if (!into.is_object() || !over.is_object()) {
    into = over;
    return;
  }
  for (const auto& [key, value] : over.items()) {
    auto it = into.find(key);
    if (it == into.end()) {
      into[key] = value;
    } else {
      deep_merge(*it, value);
    }
  }
}

template <class T>
void take(std::optional<T>& field, const std::optional<T>& over) {
  if (over) field = over;
}

std::string listed(auto const& names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

[[noreturn]] void wrong_type(const std::string& key, const char* expected, const Json& value) {
  throw ModelSettingsError(key, std::string("must be ") + expected + ", not " + std::string(json_type_name(value)) +
                                    " " + preview(value));
}

}  // namespace

std::string_view to_string(ReasoningEffort effort) noexcept {
  for (const auto& [value, name] : kEfforts) {
    if (value == effort) return name;
  }
  return "medium";
}

ModelSettings ModelSettings::merged(const ModelSettings& over) const {
  ModelSettings out = *this;
  take(out.temperature, over.temperature);
  take(out.top_p, over.top_p);
  take(out.max_output_tokens, over.max_output_tokens);
  take(out.stop, over.stop);
  take(out.seed, over.seed);
  take(out.tool_choice, over.tool_choice);
  take(out.parallel_tool_calls, over.parallel_tool_calls);
  take(out.reasoning_effort, over.reasoning_effort);
  take(out.thinking_budget_tokens, over.thinking_budget_tokens);
  if (!over.extra.is_null()) {
    if (out.extra.is_null()) out.extra = Json::object();
    deep_merge(out.extra, over.extra);
  }
  return out;
}

bool ModelSettings::empty() const noexcept {
  return !temperature && !top_p && !max_output_tokens && !stop && !seed && !tool_choice && !parallel_tool_calls &&
         !reasoning_effort && !thinking_budget_tokens && (extra.is_null() || extra.empty());
}

void ModelSettings::validate(const std::vector<std::string>* tools) const {
  if (temperature && (!std::isfinite(*temperature) || *temperature < 0 || *temperature > 2)) {
    throw ModelSettingsError("temperature", "must be a number from 0 to 2, not " + std::to_string(*temperature));
  }
  if (top_p && (!std::isfinite(*top_p) || *top_p < 0 || *top_p > 1)) {
    throw ModelSettingsError("top_p", "must be a number from 0 to 1, not " + std::to_string(*top_p));
  }
  if (max_output_tokens && *max_output_tokens < 1) {
    throw ModelSettingsError("max_output_tokens", "must be at least 1, not " + std::to_string(*max_output_tokens));
  }
  if (stop) {
    for (std::size_t i = 0; i < stop->size(); ++i) {
      if ((*stop)[i].empty()) throw ModelSettingsError("stop[" + std::to_string(i) + "]", "must not be empty");
    }
  }
  if (thinking_budget_tokens && *thinking_budget_tokens < 1) {
    throw ModelSettingsError("thinking_budget_tokens",
                             "must be at least 1, not " + std::to_string(*thinking_budget_tokens));
  }
  if (tool_choice && tool_choice->mode == ToolChoice::Mode::tool) {
    if (tool_choice->tool.empty()) throw ModelSettingsError("tool_choice", "names no tool");
    if (tools && std::find(tools->begin(), tools->end(), tool_choice->tool) == tools->end()) {
      throw ModelSettingsError("tool_choice", "names the tool '" + tool_choice->tool +
                                                  "', which the agent does not have; its tools: " +
                                                  (tools->empty() ? std::string("none") : listed(*tools)));
    }
  }
  if (!extra.is_null()) {
    if (!extra.is_object()) wrong_type("extra", "a JSON object", extra);
    for (std::string_view key : kCoreKeys) {
      if (extra.contains(key)) {
        throw ModelSettingsError("extra." + std::string(key),
                                 "is written by agentkit from the request and cannot be overridden; refused keys: " +
                                     listed(kCoreKeys));
      }
    }
  }
}

Json ModelSettings::to_json() const {
  Json out = Json::object();
  if (temperature) out["temperature"] = *temperature;
  if (top_p) out["top_p"] = *top_p;
  if (max_output_tokens) out["max_output_tokens"] = *max_output_tokens;
  if (stop) out["stop"] = *stop;
  if (seed) out["seed"] = *seed;
  if (tool_choice) {
    switch (tool_choice->mode) {
      case ToolChoice::Mode::automatic: out["tool_choice"] = "auto"; break;
      case ToolChoice::Mode::required: out["tool_choice"] = "required"; break;
      case ToolChoice::Mode::none: out["tool_choice"] = "none"; break;
      case ToolChoice::Mode::tool: out["tool_choice"] = {{"tool", tool_choice->tool}}; break;
    }
  }
  if (parallel_tool_calls) out["parallel_tool_calls"] = *parallel_tool_calls;
  if (reasoning_effort) out["reasoning_effort"] = to_string(*reasoning_effort);
  if (thinking_budget_tokens) out["thinking_budget_tokens"] = *thinking_budget_tokens;
  if (!extra.is_null()) out["extra"] = extra;
  return out;
}

ModelSettings ModelSettings::from_json(const Json& j) {
  if (!j.is_object()) wrong_type("settings", "an object", j);
  ModelSettings s;
  const auto number = [](const std::string& key, const Json& v) {
    if (!v.is_number()) wrong_type(key, "a number", v);
    return v.get<double>();
  };
  const auto integer = [](const std::string& key, const Json& v) -> std::int64_t {
    if (!v.is_number_integer()) wrong_type(key, "an integer", v);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      throw ModelSettingsError(key, "is out of range: " + v.dump());
    }
    return v.get<std::int64_t>();
  };
  const auto int32 = [&](const std::string& key, const Json& v) {
    const std::int64_t n = integer(key, v);
    if (n < INT32_MIN || n > INT32_MAX) throw ModelSettingsError(key, "is out of range: " + v.dump());
    return static_cast<int>(n);
  };
  for (const auto& [key, v] : j.items()) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      throw ModelSettingsError(key, "is not a model setting; accepted: " + listed(kFields));
    }
    if (v.is_null()) continue;  // as if absent
    if (key == "temperature") {
      s.temperature = number(key, v);
    } else if (key == "top_p") {
      s.top_p = number(key, v);
    } else if (key == "max_output_tokens") {
      s.max_output_tokens = int32(key, v);
    } else if (key == "thinking_budget_tokens") {
      s.thinking_budget_tokens = int32(key, v);
    } else if (key == "seed") {
      s.seed = integer(key, v);
    } else if (key == "parallel_tool_calls") {
      if (!v.is_boolean()) wrong_type(key, "true or false", v);
      s.parallel_tool_calls = v.get<bool>();
    } else if (key == "stop") {
      if (!v.is_array()) wrong_type(key, "a list of strings", v);
      std::vector<std::string> stop;
      for (const auto& item : v) {
        if (!item.is_string()) wrong_type(key + "[" + std::to_string(stop.size()) + "]", "a string", item);
        stop.push_back(item.get<std::string>());
      }
      s.stop = std::move(stop);
    } else if (key == "reasoning_effort") {
      if (!v.is_string()) wrong_type(key, "a string", v);
      const std::string name = v.get<std::string>();
      auto it = std::find_if(kEfforts.begin(), kEfforts.end(), [&](const auto& e) { return e.second == name; });
      if (it == kEfforts.end()) throw ModelSettingsError(key, "must be one of minimal, low, medium, high, not '" + name + "'");
      s.reasoning_effort = it->first;
    } else if (key == "tool_choice") {
      if (v.is_string()) {
        const std::string mode = v.get<std::string>();
        if (mode == "auto") {
          s.tool_choice = ToolChoice::automatic();
        } else if (mode == "required") {
          s.tool_choice = ToolChoice::required();
        } else if (mode == "none") {
          s.tool_choice = ToolChoice::none();
        } else {
          throw ModelSettingsError(key, "must be auto, required, none or {tool: <name>}, not '" + mode + "'");
        }
      } else if (v.is_object() && v.size() == 1 && v.contains("tool") && v["tool"].is_string()) {
        s.tool_choice = ToolChoice::named(v["tool"].get<std::string>());
      } else {
        throw ModelSettingsError(key, "must be auto, required, none or {tool: <name>}, not " + preview(v));
      }
    } else if (key == "extra") {
      s.extra = v;
    }
  }
  s.validate();
  return s;
}

}  // namespace agentkit
