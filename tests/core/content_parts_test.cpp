// Content parts: the vocabulary, its documents, its checks and its caps.
#include <catch2/catch.hpp>

#include <agentkit/messages.h>

using namespace agentkit;

namespace {

// Bytes that are not UTF-8 (a PNG header with a stray 0xFF).
const std::string kPng("\x89PNG\r\n\x1a\n\xff\xfe\x00\x01", 12);

}  // namespace

TEST_CASE("base64 encodes and decodes every byte value bit-exact", "[parts]") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  CHECK(base64_decode(base64_encode(all)) == all);
  CHECK(base64_decode("Zm9v\nYmFy") == "foobar");
  CHECK_FALSE(base64_decode("Zm9"));     // not a multiple of four
  CHECK_FALSE(base64_decode("Zm9v!A==")); // outside the alphabet
  CHECK_FALSE(base64_decode("Z==="));     // too much padding
  CHECK_FALSE(base64_decode("Zg==Zg==")); // data after padding
}

TEST_CASE("text-only messages stay one line and text() joins the text parts", "[parts]") {
  const Message m = Message::user("hello");
  REQUIRE(m.content.size() == 1);
  CHECK(std::get<TextPart>(m.content[0]).text == "hello");
  CHECK(m.text() == "hello");
  CHECK(Message::assistant("").content.empty());

  const Message mixed = Message::assistant({ReasoningPart{.text = "think", .signature = "sig", .provider = "anthropic"},
                                            TextPart{"a"}, ImagePart{.url = "https://x/y.png"}, TextPart{"b"},
                                            RefusalPart{"no"}});
  CHECK(mixed.text() == "ab");  // reasoning and refusals are not the answer
  Message grown;
  grown.add_text("x");
  grown.add_text("y");
  CHECK(grown.content.size() == 1);
  CHECK(grown.text() == "xy");
}

TEST_CASE("parts round-trip through documents, binary data as base64 bit-exact", "[parts]") {
  Message m = Message::tool_result("c1", "camera", {TextPart{"frame 7"}, ImagePart{"image/png", kPng, ""},
                                                    FilePart{"application/pdf", kPng, "a.pdf", ""},
                                                    ReasoningPart{"t", "s", "r", "anthropic"}, RefusalPart{"no"}});
  const Json doc = to_json(m);
  CHECK(doc.at("content").at(1).at("data") == base64_encode(kPng));
  CHECK_NOTHROW(doc.dump());  // base64 is text: the document always dumps
  const Message back = message_from_json(Json::parse(doc.dump()));
  CHECK(back == m);
  CHECK(std::get<ImagePart>(back.content[1]).data == kPng);
}

TEST_CASE("a document written before content parts reads its content string as one text part", "[parts]") {
  const Message m = message_from_json(Json{{"role", "user"}, {"content", "hi"}});
  CHECK(m == Message::user("hi"));
  CHECK(message_from_json(Json{{"role", "assistant"}, {"content", ""}}).content.empty());
}

TEST_CASE("malformed parts are typed errors", "[parts]") {
  CHECK_THROWS_AS(check_part(ImagePart{}), InvalidContent);  // neither data nor url
  CHECK_THROWS_WITH(check_part(ImagePart{}), Catch::Contains("exactly one of data and url"));
  CHECK_THROWS_AS(check_part(ImagePart{"image/png", "x", "https://x"}), InvalidContent);  // both
  CHECK_THROWS_WITH(check_part(ImagePart{"", kPng, ""}), Catch::Contains("without a media type"));
  CHECK_THROWS_WITH(check_part(FilePart{"pdf", kPng, "a.pdf", ""}), Catch::Contains("not a media type"));
  CHECK_THROWS_WITH(check_part(ImagePart{"application/pdf", kPng, ""}), Catch::Contains("not an image type"));
  CHECK_NOTHROW(check_part(ImagePart{.url = "https://example.com/a.png"}));

  CHECK_THROWS_AS(part_from_json(Json{{"type", "image"}, {"media_type", "image/png"}, {"data", "***"}}),
                  InvalidContent);
  CHECK_THROWS_AS(part_from_json(Json{{"type", "image"}}), InvalidContent);
  CHECK_THROWS_WITH(part_from_json(Json{{"type", "hologram"}}), Catch::Contains("unknown type 'hologram'"));
  CHECK_THROWS_AS(part_from_json(Json{{"type", "text"}, {"text", 3}}), InvalidContent);
  CHECK_THROWS_AS(message_from_json(Json{{"role", "user"}, {"content", 5}}), agentkit::Error);
}

TEST_CASE("sanitize_utf8 mends text parts and leaves binary data and signatures alone", "[parts]") {
  Message m = Message::user({TextPart{"caf\xff"}, ImagePart{"image/png", kPng, ""},
                             ReasoningPart{"r\xff", "sig\xff", "", "anthropic"}});
  const Message clean = sanitize_utf8(m);
  CHECK(std::get<TextPart>(clean.content[0]).text == "caf\xEF\xBF\xBD");
  CHECK(std::get<ImagePart>(clean.content[1]).data == kPng);
  CHECK(std::get<ReasoningPart>(clean.content[2]).signature == "sig\xff");
  CHECK(std::get<ReasoningPart>(clean.content[2]).text == "r\xEF\xBF\xBD");
}

TEST_CASE("content over the per-part or per-request cap is ContentTooLarge", "[parts][limits]") {
  const ContentLimits limits{.max_part_bytes = 100, .max_request_bytes = 150};
  const std::vector<Message> small{Message::user({ImagePart{"image/png", std::string(100, 'x'), ""}})};
  CHECK_NOTHROW(check_content(small, limits));
  const std::vector<Message> big_part{Message::user({ImagePart{"image/png", std::string(101, 'x'), ""}})};
  try {
    check_content(big_part, limits);
    FAIL("no ContentTooLarge");
  } catch (const ContentTooLarge& e) {
    CHECK(e.bytes() == 101);
    CHECK(e.limit() == 100);
    CHECK_THAT(e.what(), Catch::Contains("image image/png, 101 bytes") && Catch::Contains("per-part cap"));
  }
  const std::vector<Message> big_request{Message::user({ImagePart{"image/png", std::string(80, 'x'), ""}}),
                                         Message::user({FilePart{"application/pdf", std::string(80, 'x'), "", ""}})};
  CHECK_THROWS_AS(check_content(big_request, limits), ContentTooLarge);
  CHECK_THROWS_WITH(check_content(big_request, limits), Catch::Contains("per-request cap"));
  CHECK_THROWS_AS(check_content(std::vector<Message>{Message::user({ImagePart{}})}, limits), InvalidContent);
  CHECK(ContentLimits{}.max_part_bytes == 20u << 20);
  CHECK(ContentLimits{}.max_request_bytes == 32u << 20);
}

TEST_CASE("check_part with limits is check_content's per-part check for one part", "[parts][limits]") {
  const ContentLimits limits{.max_part_bytes = 100};
  CHECK_NOTHROW(check_part(ContentPart{ImagePart{"image/png", std::string(100, 'x'), ""}}, limits));
  const ContentPart big{ImagePart{"image/png", std::string(101, 'x'), ""}};
  CHECK_THROWS_AS(check_part(big, limits), ContentTooLarge);
  std::string one;
  std::string many;
  try {
    check_part(big, limits);
  } catch (const ContentTooLarge& e) {
    one = e.what();
  }
  try {
    check_content(std::vector<Message>{Message::user({big})}, limits);
  } catch (const ContentTooLarge& e) {
    many = e.what();
  }
  CHECK(one == many);  // one message for both callers
  CHECK_THROWS_AS(check_part(ContentPart{FilePart{}}, limits), InvalidContent);
  CHECK_THROWS_AS(check_part(ContentPart{ImagePart{"text/plain", "x", ""}}, limits), InvalidContent);
}
