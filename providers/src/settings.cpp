#include <agentkit/providers/settings.h>

#include <algorithm>

namespace agentkit::providers {
namespace {

// Depth-bounded: a schema nested past this is not one OpenAI takes strictly.
constexpr int kMaxDepth = 64;

bool strict_node(const Schema& s, int depth) {
  if (depth > kMaxDepth) return false;
  if (!s.is_object()) return true;
  const bool is_object_type = (s.contains("type") && s["type"] == "object") || s.contains("properties");
  if (is_object_type) {
    if (!s.contains("properties") || !s["properties"].is_object()) return false;
    auto additional = s.find("additionalProperties");
    if (additional == s.end() || *additional != false) return false;
    const Schema required = s.value("required", Schema::array());
    if (!required.is_array()) return false;
    for (const auto& [name, prop] : s["properties"].items()) {
      if (std::find(required.begin(), required.end(), name) == required.end()) return false;
      if (!strict_node(prop, depth + 1)) return false;
    }
  }
  if (auto items = s.find("items"); items != s.end() && !strict_node(*items, depth + 1)) return false;
  for (const char* key : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    if (auto alts = s.find(key); alts != s.end() && alts->is_array()) {
      for (const auto& alt : *alts) {
        if (!strict_node(alt, depth + 1)) return false;
      }
    }
  }
  for (const char* key : {"$defs", "definitions"}) {
    if (auto defs = s.find(key); defs != s.end() && defs->is_object()) {
      for (const auto& [name, def] : defs->items()) {
        if (!strict_node(def, depth + 1)) return false;
      }
    }
  }
  return true;
}

void merge_into(Schema& into, const Json& over) {
  if (!into.is_object() || !over.is_object()) {
    into = Schema::parse(over.dump());
    return;
  }
  for (const auto& [key, value] : over.items()) {
    auto it = into.find(key);
    if (it == into.end()) {
      into[key] = Schema::parse(value.dump());
    } else {
      merge_into(*it, value);
    }
  }
}

}  // namespace

bool openai_strict_compatible(const Schema& schema) { return strict_node(schema, 0); }

void merge_extra(Schema& body, const Json& extra) {
  if (extra.is_null()) return;
  merge_into(body, extra);
}

}  // namespace agentkit::providers
