#include <agentkit/redact.h>

#include <algorithm>
#include <cctype>

namespace agentkit {
namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace

void Redactor::add_one(std::string_view secret) {
  if (secret.size() < kMinSecretChars) return;
  if (std::find(secrets_.begin(), secrets_.end(), secret) != secrets_.end()) return;
  const auto at = std::find_if(secrets_.begin(), secrets_.end(),
                               [&](const std::string& s) { return s.size() < secret.size(); });
  secrets_.emplace(at, secret);
}

void Redactor::add(std::string_view secret) {
  secret = trim(secret);
  add_one(secret);
  while (!secret.empty()) {
    const auto end = std::find_if(secret.begin(), secret.end(), blank) - secret.begin();
    add_one(secret.substr(0, static_cast<std::size_t>(end)));
    secret = trim(secret.substr(static_cast<std::size_t>(end)));
  }
}

bool Redactor::is_credential_header(std::string_view name) noexcept {
  for (const std::string_view known : {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}) {
    if (iequals(name, known)) return true;
  }
  return false;
}

void Redactor::add_header(std::string_view name, std::string_view value) {
  if (is_credential_header(name)) add(value);
}

bool Redactor::redact_in_place(std::string& text) const {
  bool changed = false;
  for (const auto& secret : secrets_) {
    for (auto pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos + kMarker.size())) {
      text.replace(pos, secret.size(), kMarker);
      changed = true;
    }
  }
  return changed;
}

std::string Redactor::redact(std::string text) const {
  redact_in_place(text);
  return text;
}

void Redactor::redact_in_place(Json& value) const {
  if (secrets_.empty()) return;
  std::vector<Json*> pending{&value};
  while (!pending.empty()) {
    Json* v = pending.back();
    pending.pop_back();
    if (v->is_string()) {
      redact_in_place(v->get_ref<std::string&>());
    } else if (v->is_structured()) {
      for (auto& child : *v) pending.push_back(&child);
    }
  }
}

}  // namespace agentkit
