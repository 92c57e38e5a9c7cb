#pragma once
// How a tool's model-facing description is chosen from what its author wrote.
//
// Doc text (`ToolBuilder::doc`) is interpreted:
//   - line endings are normalised (CRLF, CR -> LF) and the text is dedented
//     like a Python docstring (first line stripped, common indent of the rest
//     removed, blank edges dropped);
//   - the whole text is the description, unless a line holding only `---`
//     appears: everything above it is for the model, everything below is for
//     humans;
//   - a developer note (TODO, FIXME, XXX, HACK at a line start, after
//     indentation and an optional list bullet, as a whole word) above the cut
//     is refused: it would read as an instruction to the model.
// An explicit description (`ToolBuilder::description`) replaces the doc text
// outright and is only stripped of surrounding whitespace.
// Either way the chosen text must be at least kMinDescriptionChars characters.
#include <optional>
#include <string>
#include <string_view>

namespace agentkit {

inline constexpr std::size_t kMinDescriptionChars = 30;

// Returns the description for tool `tool_name`, or throws ToolDefinitionError
// with the reason (developer note, too short, text below the cut not counted).
std::string resolve_description(std::string_view tool_name, std::optional<std::string_view> doc,
                                std::optional<std::string_view> explicit_description);

// The normalisation step alone: CRLF/CR -> LF, docstring-style dedent, blank
// edges removed. Exposed for hosts that render doc text themselves.
std::string clean_doc(std::string_view text);

}  // namespace agentkit
