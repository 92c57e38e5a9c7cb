#pragma once
// trompeloeil mocks of agentkit's interfaces, for narrow interaction tests.
// Include after <catch2/catch.hpp>.
#include <catch2/trompeloeil.hpp>

#include <agentkit/model.h>
#include <agentkit/tool.h>

namespace agentkit::testing {

class MockModel : public Model {
 public:
  MAKE_MOCK2(complete, ModelResponse(const ModelRequest&, RunContext&), override);
};

class MockTool : public Tool {
 public:
  MAKE_CONST_MOCK0(spec, const ToolSpec&(), noexcept override);
  MAKE_CONST_MOCK2(run, Json(const Json&, RunContext&), override);
};

class MockObserver : public Observer {
 public:
  MAKE_MOCK1(on_event, void(const Event&), override);
};

}  // namespace agentkit::testing
