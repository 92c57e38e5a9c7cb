// The Gemini dialect of the schema compiler: JSON Schema as agentkit derives
// it, rewritten into the OpenAPI 3.0 subset Gemini's function declarations
// (`parameters`) and `responseSchema` take (see
// ../shared/fixtures/wire/gemini/SCHEMA_SUBSET.md: Gemini answers an unknown
// field with a protobuf 400, "Unknown name ... Cannot find field").
//
// Dropping a keyword is only done where it loses nothing agentkit enforces:
// the run engine validates every call's arguments against the tool's
// declared schema before the tool runs (and an answer against the output
// schema), so `additionalProperties: false` and annotations ($schema,
// examples, ...) may be left out. A keyword that would change what the model
// is told a valid value is (exclusive bounds, oneOf, an open map, ...) is
// refused instead, naming the field.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <agentkit/errors.h>

#include "schema_dialects.h"

namespace agentkit::providers::detail {
namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& at) {
  throw ToolDefinitionError("Gemini cannot express " + what + " at " + at);
}

// Annotations Gemini has no field for; they constrain nothing.
constexpr std::string_view kDropped[] = {"$schema", "$id", "$comment", "examples", "deprecated", "readOnly",
                                         "writeOnly"};
// Kept as they are: fields of Gemini's Schema with JSON Schema's meaning.
constexpr std::string_view kKept[] = {"title",     "description", "minItems",  "maxItems",  "minProperties",
                                      "maxProperties", "minLength", "maxLength", "pattern", "minimum",
                                      "maximum",   "default",     "example",   "propertyOrdering"};
constexpr std::string_view kTypes[] = {"string", "number", "integer", "boolean", "array", "object"};
// The formats Gemini takes per type; another is said in the description.
bool known_format(std::string_view type, std::string_view format) {
  if (type == "string") return format == "enum" || format == "date-time";
  if (type == "number") return format == "float" || format == "double";
  if (type == "integer") return format == "int32" || format == "int64";
  return false;
}
// More $ref expansions than this in one schema is refused (a DAG of
// references can grow exponentially when inlined).
constexpr int kMaxExpansions = 1000;

template <std::size_t N>
bool listed(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

bool is_null_type(const Schema& s) { return s.is_object() && s.contains("type") && s["type"] == "null"; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class Compiler {
 public:
  explicit Compiler(const Schema& root) : root_(root) {}

  Schema compile(const Schema& s, const std::string& at, bool root) {
    if (!s.is_object()) refuse("a schema that is not an object (" + s.dump() + ")", at);
    if (s.contains("$ref")) return inline_ref(s, at, root);
    if (s.contains("anyOf") && !s.contains("type")) return any_of(s, at, root);

    Schema out = Schema::object();
    bool nullable = false;
    std::string type, format_note;
    if (auto t = s.find("type"); t != s.end()) {
      type = type_of(*t, at, nullable);
      out["type"] = type;
    }
    for (const auto& [key, value] : s.items()) {
      if (key == "type") continue;
      if (key == "properties") {
        if (!value.is_object()) refuse("'properties' that is not an object", at);
        Schema properties = Schema::object();
        for (const auto& [name, prop] : value.items()) properties[name] = compile(prop, at + "." + name, false);
        out["properties"] = std::move(properties);
      } else if (key == "required") {
        out["required"] = value;
      } else if (key == "items") {
        if (value.is_array()) refuse("tuple 'items' (a list of schemas)", at);
        out["items"] = compile(value, at + "[]", false);
      } else if (key == "enum") {
        out["enum"] = enum_of(value, at, nullable);
        if (type.empty()) out["type"] = type = "string";
      } else if (key == "const") {
        if (!value.is_string()) refuse("a 'const' that is not a string (" + value.dump() + ")", at);
        out["enum"] = Schema::array({value});
        if (type.empty()) out["type"] = type = "string";
      } else if (key == "nullable") {
        if (value == true) nullable = true;
      } else if (key == "anyOf") {
        // Beside a type: each alternative narrows it.
        Schema alts = Schema::array();
        for (const auto& alt : value) {
          if (is_null_type(alt)) {
            nullable = true;
          } else {
            alts.push_back(compile(alt, at, false));
          }
        }
        out["anyOf"] = std::move(alts);
      } else if (key == "additionalProperties") {
        // false: left out, the arguments check keeps the object closed. An
        // open map has no named properties Gemini could declare.
        const bool named = s.contains("properties") && s["properties"].is_object() && !s["properties"].empty();
        if (value != false && !named) refuse("the open object (a map: 'additionalProperties' " + value.dump() + ")", at);
      } else if (key == "format") {
        if (!value.is_string()) refuse("a 'format' that is not a string", at);
        const std::string format = value.get<std::string>();
        if (known_format(type, format)) {
          out["format"] = format;
        } else {
          format_note = "format: " + format;
        }
      } else if ((key == "$defs" || key == "definitions") && root) {
        // inlined where referenced
      } else if (listed(kKept, key)) {
        out[key] = value;
      } else if (!listed(kDropped, key)) {
        refuse("'" + key + "'", at);
      }
    }
    if (!format_note.empty()) {
      // A format Gemini has no value for, said where the model reads it.
      const std::string d = out.value("description", std::string());
      out["description"] = d + (d.empty() ? "(" : " (") + format_note + ")";
    }
    if (!out.contains("type") && !out.contains("anyOf")) refuse("the untyped value (any JSON value)", at);
    if (type == "array" && !out.contains("items")) refuse("an array without 'items'", at);
    if (type == "object" && !root && (!out.contains("properties") || out["properties"].empty())) {
      refuse("an object without properties (a free-form object)", at);
    }
    if (nullable) out["nullable"] = true;
    return out;
  }

 private:
  // "string", ["string", "null"] -> "string" and nullable.
  std::string type_of(const Schema& t, const std::string& at, bool& nullable) {
    std::string type;
    if (t.is_string()) {
      type = lower(t.get<std::string>());
    } else if (t.is_array()) {
      for (const auto& each : t) {
        if (!each.is_string()) refuse("a type that is not a string", at);
        const std::string name = lower(each.get<std::string>());
        if (name == "null") {
          nullable = true;
        } else if (type.empty()) {
          type = name;
        } else {
          refuse("a list of types (" + t.dump() + ")", at);
        }
      }
    } else {
      refuse("a type that is not a string", at);
    }
    if (type.empty() || type == "null") refuse("a value that can only be null", at);
    if (!listed(kTypes, type)) refuse("the type '" + type + "'", at);
    return type;
  }

  Schema enum_of(const Schema& values, const std::string& at, bool& nullable) {
    if (!values.is_array()) refuse("an 'enum' that is not a list", at);
    Schema out = Schema::array();
    for (const auto& v : values) {
      if (v.is_null()) {
        nullable = true;
      } else if (v.is_string()) {
        out.push_back(v);
      } else {
        refuse("a non-string enum value (" + v.dump() + "; Gemini enums are strings)", at);
      }
    }
    if (out.empty()) refuse("an enum without a string value", at);
    return out;
  }

  // {"anyOf": [T, {"type": "null"}]} -> T with nullable; other choices stay anyOf.
  Schema any_of(const Schema& s, const std::string& at, bool root) {
    const Schema& alts = s["anyOf"];
    if (!alts.is_array() || alts.empty()) refuse("an 'anyOf' that is not a list of schemas", at);
    std::vector<const Schema*> values;
    bool nullable = false;
    for (const auto& alt : alts) {
      if (is_null_type(alt)) {
        nullable = true;
      } else {
        values.push_back(&alt);
      }
    }
    if (values.empty()) refuse("a value that can only be null", at);
    Schema out;
    if (values.size() == 1) {
      // The one alternative, with the annotations around the anyOf (its
      // description) taking precedence.
      Schema merged = *values.front();
      if (!merged.is_object()) refuse("a schema that is not an object (" + merged.dump() + ")", at);
      for (const auto& [key, value] : s.items()) {
        if (key != "anyOf") merged[key] = value;
      }
      out = compile(merged, at, root);
    } else {
      Schema rest = s;
      rest.erase("anyOf");
      out = Schema::object();
      Schema compiled = Schema::array();
      for (const Schema* v : values) compiled.push_back(compile(*v, at, false));
      out["anyOf"] = std::move(compiled);
      for (const auto& [key, value] : rest.items()) {
        if (key == "description" || key == "title" || key == "default") {
          out[key] = value;
        } else if (!listed(kDropped, key) && !((key == "$defs" || key == "definitions") && root)) {
          refuse("'" + key + "' beside 'anyOf'", at);
        }
      }
    }
    if (nullable) out["nullable"] = true;
    return out;
  }

  // "#/$defs/Name" (or "#/definitions/Name") replaced by that definition;
  // keywords beside the $ref (a description) apply on top.
  Schema inline_ref(const Schema& s, const std::string& at, bool root) {
    if (!s["$ref"].is_string()) refuse("a '$ref' that is not a string", at);
    const std::string ref = s["$ref"].get<std::string>();
    std::string section, name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (ref.rfind(prefix, 0) == 0) {
        section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
        name = ref.substr(std::string(prefix).size());
      }
    }
    if (section.empty() || name.empty() || name.find('/') != std::string::npos) {
      refuse("the reference '" + ref + "' (only '#/$defs/<name>' is inlined)", at);
    }
    const auto defs = root_.find(section);
    if (defs == root_.end() || !defs->is_object() || !defs->contains(name)) {
      refuse("the reference '" + ref + "' to a missing definition", at);
    }
    if (std::find(expanding_.begin(), expanding_.end(), ref) != expanding_.end()) {
      refuse("the recursive reference '" + ref + "' (Gemini inlines definitions)", at);
    }
    if (++expansions_ > kMaxExpansions) refuse("more than " + std::to_string(kMaxExpansions) + " references", at);
    Schema merged = (*defs)[name];
    if (!merged.is_object()) refuse("the definition '" + ref + "' that is not an object", at);
    for (const auto& [key, value] : s.items()) {
      if (key != "$ref" && !((key == "$defs" || key == "definitions") && root)) merged[key] = value;
    }
    expanding_.push_back(ref);
    Schema out = compile(merged, at, root);
    expanding_.pop_back();
    return out;
  }

  const Schema& root_;
  std::vector<std::string> expanding_;
  int expansions_ = 0;
};

}  // namespace

Schema gemini_schema(const Schema& schema, std::string_view where) {
  Compiler compiler(schema);
  return compiler.compile(schema, std::string(where), true);
}

}  // namespace agentkit::providers::detail
