#include <agentkit/description.h>

#include <algorithm>
#include <array>
#include <vector>

#include <agentkit/errors.h>

namespace agentkit {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view strip(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string current;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      lines.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  lines.push_back(std::move(current));
  return lines;
}

std::string join(const std::vector<std::string>& lines, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (i > begin) out += '\n';
    out += lines[i];
  }
  return out;
}

bool is_blank(const std::string& line) { return strip(line).empty(); }

// Python's inspect.cleandoc on normalised lines: strip the first line's
// indent, remove the common indent of the others, drop blank edges. Trailing
// whitespace is dropped too, so a stray "\r" can never ride along.
std::vector<std::string> clean_lines(std::string_view text) {
  std::vector<std::string> lines = split_lines(text);
  std::size_t margin = std::string::npos;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto& line = lines[i];
    const std::size_t indent = line.find_first_not_of(" \t");
    if (indent != std::string::npos) margin = std::min(margin, indent);
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto& line = lines[i];
    if (i == 0) {
      line.erase(0, std::min(line.size(), line.find_first_not_of(" \t")));
    } else if (margin != std::string::npos) {
      line.erase(0, std::min(margin, line.size()));
    }
    while (!line.empty() && is_space(line.back())) line.pop_back();
  }
  while (!lines.empty() && is_blank(lines.back())) lines.pop_back();
  std::size_t first = 0;
  while (first < lines.size() && is_blank(lines[first])) ++first;
  lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(first));
  return lines;
}

// The developer-note marker at the start of `line` (after indentation and an
// optional list bullet, as a whole word), or empty.
std::string_view developer_note(std::string_view line) {
  static constexpr std::array<std::string_view, 4> kMarkers{"TODO", "FIXME", "XXX", "HACK"};
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return {};
  line.remove_prefix(i);
  for (std::string_view bullet : {std::string_view("-"), std::string_view("*"), std::string_view("+"),
                                  std::string_view("\xE2\x80\xA2")}) {
    if (line.starts_with(bullet) && line.size() > bullet.size() && (line[bullet.size()] == ' ' || line[bullet.size()] == '\t')) {
      line.remove_prefix(bullet.size());
      line.remove_prefix(line.find_first_not_of(" \t"));
      break;
    }
  }
  for (std::string_view marker : kMarkers) {
    if (!line.starts_with(marker)) continue;
    if (line.size() == marker.size()) return marker;
    const char next = line[marker.size()];
    const bool word_char = (next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') ||
                           (next >= '0' && next <= '9') || next == '_';
    if (!word_char) return marker;
  }
  return {};
}

std::size_t count_chars(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

void check_length(std::string_view tool, const std::string& text, bool below_cut_not_counted) {
  const std::size_t n = count_chars(text);
  if (n >= kMinDescriptionChars) return;
  std::string message = "tool '" + std::string(tool) + "' needs a doc text/description of at least " +
                        std::to_string(kMinDescriptionChars) +
                        " characters so the model can understand it; got " + std::to_string(n) + " chars: '" + text +
                        "'";
  if (below_cut_not_counted) {
    message += " (everything below the '---' line in its doc text is for humans and was not counted)";
  }
  throw ToolDefinitionError(message);
}

}  // namespace

std::string clean_doc(std::string_view text) {
  const auto lines = clean_lines(text);
  return join(lines, 0, lines.size());
}

std::string resolve_description(std::string_view tool, std::optional<std::string_view> doc,
                                std::optional<std::string_view> explicit_description) {
  if (explicit_description) {
    std::string text(strip(*explicit_description));
    check_length(tool, text, false);
    return text;
  }
  const auto lines = clean_lines(doc.value_or(""));
  std::size_t cut = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (strip(lines[i]) == "---") {
      cut = i;
      break;
    }
  }
  std::size_t end = cut;
  while (end > 0 && is_blank(lines[end - 1])) --end;
  for (std::size_t i = 0; i < end; ++i) {
    const std::string_view marker = developer_note(lines[i]);
    if (!marker.empty()) {
      throw ToolDefinitionError("tool '" + std::string(tool) + "' has a developer note (" + std::string(marker) +
                                ") in the part of its doc text that is sent to the model, where it reads as an "
                                "instruction; move it below a line containing only '---' (everything after that "
                                "line is for humans) or pass an explicit description");
    }
  }
  bool text_below_cut = false;
  for (std::size_t i = cut + 1; i < lines.size(); ++i) text_below_cut = text_below_cut || !is_blank(lines[i]);
  std::string text = join(lines, 0, end);
  check_length(tool, text, text_below_cut);
  return text;
}

}  // namespace agentkit
