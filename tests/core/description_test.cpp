// Description rules (spec 000, "The docstring is the description — all of it").
#include <catch2/catch.hpp>

#include <agentkit/description.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>

using agentkit::resolve_description;
using agentkit::ToolDefinitionError;

namespace {
std::string describe_doc(const std::string& doc) { return resolve_description("t", doc, std::nullopt); }
}  // namespace

TEST_CASE("the whole doc text is the description", "[description][spec]") {
  auto order_status = agentkit::tool("order_status")
                          .doc(R"(Look up the current shipping status of a customer order.

    Use this whenever the user mentions an order number, even in
    passing. The status is the carrier's own wording, and it can be up
    to an hour stale.
    )")
                          .side_effecting(false)
                          .params("order_id")
                          .fn([](const std::string&) { return std::string("in transit"); });
  CHECK(order_status->description() ==
        "Look up the current shipping status of a customer order.\n\n"
        "Use this whenever the user mentions an order number, even in\n"
        "passing. The status is the carrier's own wording, and it can be up\n"
        "to an hour stale.");
}

TEST_CASE("a --- line ends the model-facing part", "[description][spec]") {
  CHECK(describe_doc(R"(Look up the current shipping status of a customer order.

    Use this whenever the user mentions an order number.

    ---

    Backed by the carrier's v2 endpoint, which lies about 404s.
    See ticket #442 before touching the retry count.
    )") == "Look up the current shipping status of a customer order.\n\n"
           "Use this whenever the user mentions an order number.");
}

TEST_CASE("a developer note above the cut is refused", "[description][spec]") {
  const std::string doc = R"(Search the product catalogue for a free-text query.

    Notes on behaviour:
      - results are ranked by the vendor, not by us
      - TODO: this is O(n^2), rewrite before the Q3 launch
    )";
  CHECK_THROWS_WITH(resolve_description("catalogue_search", doc, std::nullopt),
                    "tool 'catalogue_search' has a developer note (TODO) in the part of its doc text that is sent "
                    "to the model, where it reads as an instruction; move it below a line containing only '---' "
                    "(everything after that line is for humans) or pass an explicit description");

  SECTION("each marker, at column zero, indented, or after a bullet") {
    for (const char* marker : {"TODO", "FIXME", "XXX", "HACK"}) {
      for (const char* prefix : {"", "   ", "- ", "  * ", "+ "}) {
        const std::string text = "Search the product catalogue for a query.\n" + std::string(prefix) + marker +
                                 " fix the ranking";
        CAPTURE(text);
        CHECK_THROWS_WITH(describe_doc(text), Catch::Contains(std::string("(") + marker + ")"));
      }
    }
  }
  SECTION("the marker as a word inside prose is not a note") {
    CHECK_NOTHROW(describe_doc("Append a TODO: item to the checklist the user is editing."));
    CHECK_NOTHROW(describe_doc("Pick a shirt size.\nXXXL is a size the vendor sells too."));
    CHECK_NOTHROW(describe_doc("Pick a shirt size from the catalogue.\nTODOS are not notes."));
  }
  SECTION("a note below the cut is left alone") {
    CHECK(describe_doc("Search the product catalogue for a free-text query.\n---\nTODO: O(n^2)") ==
          "Search the product catalogue for a free-text query.");
  }
}

TEST_CASE("the 30-character floor applies to the whole chosen text", "[description][spec]") {
  CHECK_THROWS_WITH(resolve_description("lookup", "Look it up.", std::nullopt),
                    "tool 'lookup' needs a doc text/description of at least 30 characters so the model can "
                    "understand it; got 11 chars: 'Look it up.'");

  SECTION("text below the cut is not counted, and the error says so") {
    CHECK_THROWS_WITH(resolve_description("order_status", R"(Look it up.

        ---

        Look up the current shipping status of a customer order. Use
        this whenever the user mentions an order number.
        )",
                                          std::nullopt),
                      "tool 'order_status' needs a doc text/description of at least 30 characters so the model "
                      "can understand it; got 11 chars: 'Look it up.' (everything below the '---' line in its doc "
                      "text is for humans and was not counted)");
  }
  SECTION("a thin first line with a substantial body passes") {
    CHECK_NOTHROW(describe_doc("Look it up.\nThe body makes the description long enough to pass."));
  }
  SECTION("characters, not bytes, are counted") {
    CHECK_THROWS(describe_doc("éééééééééééééééééééééééééééé"));  // 28 chars, 56 bytes
    CHECK_NOTHROW(describe_doc("éééééééééééééééééééééééééééééé"));  // 30 chars
  }
  SECTION("no doc at all is refused") {
    CHECK_THROWS_WITH(resolve_description("bare", std::nullopt, std::nullopt), Catch::Contains("got 0 chars: ''"));
  }
}

TEST_CASE("an explicit description wins outright and is only stripped", "[description][spec]") {
  auto catalogue_search = agentkit::tool("catalogue_search")
                              .doc("Search.\n\nTODO: this is O(n^2), rewrite before the Q3 launch.")
                              .description("  Search the product catalogue and return matching SKUs.\n")
                              .side_effecting(false)
                              .params("q")
                              .fn([](const std::string&) { return std::string("ok"); });
  CHECK(catalogue_search->description() == "Search the product catalogue and return matching SKUs.");
  CHECK(resolve_description("t", std::nullopt, "Keeps TODO: and\n---\nall its bytes intact, inside.") ==
        "Keeps TODO: and\n---\nall its bytes intact, inside.");
  CHECK_THROWS_WITH(resolve_description("t", std::nullopt, "  too short  "), Catch::Contains("got 9 chars"));
}

TEST_CASE("CRLF doc text is normalised and re-dedented", "[description][spec]") {
  const std::string crlf =
      "Look up the current shipping status of a customer order.\r\n\r\n    Use this whenever the user mentions "
      "an order number.\r\n    ";
  CHECK(describe_doc(crlf) ==
        "Look up the current shipping status of a customer order.\n\nUse this whenever the user mentions an order "
        "number.");
  CHECK(describe_doc("First line of a description that is long.\r    second line\r    third") ==
        "First line of a description that is long.\nsecond line\nthird");
  CHECK(agentkit::clean_doc("\n    Indented text block.\n      nested\n    back\n") ==
        "Indented text block.\n  nested\nback");
}
