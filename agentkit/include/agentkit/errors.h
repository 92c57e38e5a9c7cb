#pragma once
// The three tool error types. They are split by who can fix the problem:
//
// | error              | fires                               | who fixes it |
// |--------------------|-------------------------------------|--------------|
// | ToolDefinitionError| at declaration / registration time  | you          |
// | ToolArgumentError  | at call time, before the body runs  | the model    |
// | ToolShapeError     | at call time, after the body returns| the tool     |
//
// All three are agentkit::Error: ToolDefinitionError and ToolArgumentError
// with ErrorCode::invalid_argument, ToolShapeError with ErrorCode::protocol.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/json.h>

namespace agentkit {

// A wiring mistake: missing effects declaration, a thin description, a
// developer note above the `---` cut, a registry name collision. There is no
// runtime recovery, so it is thrown while tools are being declared, before a
// run exists. Code invalid_argument (Python's ValueError).
class ToolDefinitionError : public Error {
 public:
  explicit ToolDefinitionError(const std::string& message) : Error(ErrorCode::invalid_argument, message) {}
};

// The model authored a bad call. Every problem is collected before this is
// thrown, so one repair turn learns every mistake at once.
//
// Example message:
//   tool 'notify' call rejected: unexpected argument(s) ['message']. Accepted
//   arguments: ['msg']
class ToolArgumentError : public Error {
 public:
  // One rejected value: the argument's path ("unit", "filter.limit",
  // "tags[2]") and why it was refused.
  struct Invalid {
    std::string name;
    std::string reason;
    friend bool operator==(const Invalid&, const Invalid&) = default;
  };

  ToolArgumentError(std::string tool, std::vector<std::string> missing, std::vector<std::string> unexpected,
                    std::vector<Invalid> invalid, std::vector<std::string> accepted);

  const std::string& tool() const noexcept { return tool_; }
  // Required arguments that were absent.
  const std::vector<std::string>& missing() const noexcept { return missing_; }
  // Keys the tool does not accept.
  const std::vector<std::string>& unexpected() const noexcept { return unexpected_; }
  // Arguments present but not decodable into the declared type.
  const std::vector<Invalid>& invalid() const noexcept { return invalid_; }
  // Every argument name the tool advertises, in declaration order.
  const std::vector<std::string>& accepted() const noexcept { return accepted_; }

 private:
  std::string tool_;
  std::vector<std::string> missing_;
  std::vector<std::string> unexpected_;
  std::vector<Invalid> invalid_;
  std::vector<std::string> accepted_;
};

// The tool returned a value that does not match its declared output type.
// Carries the raw value and the expected type's name.
//
// Example message: tool 'get_quote' returned value not matching schema 'Quote'
class ToolShapeError : public Error {
 public:
  ToolShapeError(std::string tool, Json raw, std::string expected, std::string detail = {});

  const std::string& tool() const noexcept { return tool_; }
  const Json& raw() const noexcept { return raw_; }
  const std::string& expected() const noexcept { return expected_; }
  // What exactly did not match (for logs; the message stays short).
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string tool_;
  Json raw_;
  std::string expected_;
  std::string detail_;
};

// Renders names as ['a', 'b'] (the seed's list notation, used in messages).
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace agentkit
