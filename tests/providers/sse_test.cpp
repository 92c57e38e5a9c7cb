// SseDecoder and NdjsonDecoder: hand-written framing vectors, openai-node's
// line decoder vectors, and every recorded stream under ../shared/fixtures/wire
// decoded whole, split at every byte and in random chunkings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <agentkit/providers/sse.h>

#include "../helpers/paths.h"
#include "../helpers/files.h"

// Defined in providers/src/sse.cpp: SseDecoder's own line splitter, exposed
// only to this test.
namespace agentkit::providers::detail {
std::vector<std::string> sse_lines_for_testing(const std::vector<std::string>& chunks, bool flush);
}

namespace {

namespace fs = std::filesystem;
using agentkit::providers::NdjsonDecoder;
using agentkit::providers::SseDecoder;
using agentkit::providers::SseEvent;
using nlohmann::json;
using agentkit_test::read_file;

// A comparable, printable copy of an SseEvent.
struct Ev {
  std::string event;
  std::string data;
  std::string id;
  std::optional<long> retry;
  bool operator==(const Ev&) const = default;
};

Ev copy(const SseEvent& e) { return {e.event, e.data, e.id, e.retry}; }

bool same(const SseEvent& a, const Ev& b) {
  return a.event == b.event && a.data == b.data && a.id == b.id && a.retry == b.retry;
}

std::string escaped(std::string_view s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Feeds `chunks` in order, then finish() unless told otherwise.
std::vector<Ev> decode_chunks(const std::vector<std::string_view>& chunks, bool finish = true) {
  std::vector<Ev> events;
  SseDecoder decoder;
  const auto sink = [&](const SseEvent& e) { events.push_back(copy(e)); };
  for (const auto chunk : chunks) decoder.feed(chunk, sink);
  if (finish) decoder.finish(sink);
  return events;
}

std::vector<Ev> decode(std::string_view whole) { return decode_chunks({whole}); }

// Like decode(), but compares against `expected` as events arrive instead of
// copying them: the every-split loops below decode each fixture thousands of times.
bool decodes_to(const std::vector<std::string_view>& chunks, const std::vector<Ev>& expected) {
  std::size_t i = 0;
  bool ok = true;
  SseDecoder decoder;
  const auto sink = [&](const SseEvent& e) {
    ok = ok && i < expected.size() && same(e, expected[i]);
    ++i;
  };
  for (const auto chunk : chunks) decoder.feed(chunk, sink);
  decoder.finish(sink);
  return ok && i == expected.size();
}

std::vector<std::string> ndjson(const std::vector<std::string_view>& chunks) {
  std::vector<std::string> lines;
  NdjsonDecoder decoder;
  const auto sink = [&](std::string_view line) { lines.emplace_back(line); };
  for (const auto chunk : chunks) decoder.feed(chunk, sink);
  decoder.finish(sink);
  return lines;
}

std::vector<std::string_view> split_at(std::string_view s, std::size_t k) { return {s.substr(0, k), s.substr(k)}; }

std::vector<std::string_view> random_chunks(std::string_view s, std::mt19937& rng) {
  // Mostly tiny chunks (every CR/LF and UTF-8 boundary gets hit), sometimes large ones.
  static constexpr std::size_t limits[] = {1, 3, 17, 257, std::string_view::npos};
  const std::size_t limit = std::min(s.size(), limits[rng() % std::size(limits)]);
  std::vector<std::string_view> chunks;
  for (std::size_t at = 0; at < s.size();) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, std::max<std::size_t>(limit, 1))(rng);
    chunks.push_back(s.substr(at, n));
    at += n;
  }
  return chunks;
}

std::string hex_bytes(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

const fs::path wire_dir = fs::path(AGENTKIT_SHARED_DIR) / "fixtures" / "wire";

bool have_fixtures() {
  if (fs::is_directory(wire_dir)) return true;
  WARN("SSE fixture checks skipping: ../shared/fixtures/wire not found (looked in " << wire_dir.string() << ")");
  return false;
}

bool looks_like_json(std::string_view data) { return !data.empty() && (data.front() == '{' || data.front() == '['); }

}  // namespace

namespace Catch {
template <>
struct StringMaker<Ev> {
  static std::string convert(const Ev& e) {
    std::string s = "{event=\"" + escaped(e.event) + "\" data=\"" + escaped(e.data) + "\" id=\"" + escaped(e.id) + "\"";
    if (e.retry) s += " retry=" + std::to_string(*e.retry);
    return s + "}";
  }
};
}  // namespace Catch

// ---------------------------------------------------------------------------
// Hand-written framing vectors

TEST_CASE("SSE lines may end in LF, CRLF or a lone CR", "[sse]") {
  CHECK(decode("data: hello\n\n") == std::vector<Ev>{{"", "hello"}});
  CHECK(decode("event: x\r\ndata: hello\r\n\r\n") == std::vector<Ev>{{"x", "hello"}});
  CHECK(decode("data: a\r\rdata: b\r\r") == std::vector<Ev>{{"", "a"}, {"", "b"}});
  CHECK(decode("data: a\rdata: b\n\r\n") == std::vector<Ev>{{"", "a\nb"}});
}

TEST_CASE("SSE a CR ending one chunk and an LF opening the next are one line end", "[sse]") {
  // Were the LF taken as a second (blank) line, "a" and "b" would be two events.
  CHECK(decode_chunks({"data: a\r", "\ndata: b\n\n"}) == std::vector<Ev>{{"", "a\nb"}});
  CHECK(decode_chunks({"data: a\r", "", "\ndata: b\n\n"}) == std::vector<Ev>{{"", "a\nb"}});
  CHECK(decode_chunks({"data: a\r", "\n", "\r", "\n"}, false) == std::vector<Ev>{{"", "a"}});
  // A CR at a chunk end followed by anything else is a line end of its own.
  CHECK(decode_chunks({"data: a\r", "data: b\r\r"}) == std::vector<Ev>{{"", "a\nb"}});
  CHECK(decode_chunks({"data: a\r", "\r"}, false) == std::vector<Ev>{{"", "a"}});
}

TEST_CASE("SSE comment lines are skipped and a comment-only block dispatches nothing", "[sse]") {
  CHECK(decode(": keep-alive\n\n:\n\ndata: x\n: mid-event comment\n\n") == std::vector<Ev>{{"", "x"}});
  CHECK(decode(": OPENROUTER PROCESSING\r\n\r\n").empty());
}

TEST_CASE("SSE data lines join with newlines", "[sse]") {
  CHECK(decode("data: a\ndata: b\n\n") == std::vector<Ev>{{"", "a\nb"}});
  CHECK(decode("data: a\ndata:\ndata: b\n\n") == std::vector<Ev>{{"", "a\n\nb"}});
}

TEST_CASE("SSE strips exactly one space after the colon", "[sse]") {
  CHECK(decode("data:x\n\n") == std::vector<Ev>{{"", "x"}});
  CHECK(decode("data:  x\n\n") == std::vector<Ev>{{"", " x"}});
  CHECK(decode("data:x:y\n\n") == std::vector<Ev>{{"", "x:y"}});
  CHECK(decode("event:ping\n\n") == std::vector<Ev>{{"ping", ""}});
}

TEST_CASE("SSE an event without data is dispatched", "[sse]") {
  CHECK(decode("event: ping\n\n") == std::vector<Ev>{{"ping", ""}});
  CHECK(decode("event: ping\n\nevent: completion\n\n") == std::vector<Ev>{{"ping", ""}, {"completion", ""}});
}

TEST_CASE("SSE an empty data line gives an event with empty data", "[sse]") {
  CHECK(decode("data\n\n") == std::vector<Ev>{{"", ""}});
  CHECK(decode("data:\n\n") == std::vector<Ev>{{"", ""}});
  CHECK(decode("data\ndata\n\n") == std::vector<Ev>{{"", "\n"}});
}

TEST_CASE("SSE a line without a colon is a field name with an empty value", "[sse]") {
  CHECK(decode("event: a\nevent\ndata: x\n\n") == std::vector<Ev>{{"", "x"}});
}

TEST_CASE("SSE event type and data reset after dispatch, blank lines alone dispatch nothing", "[sse]") {
  CHECK(decode("\n\n\nevent: a\ndata: 1\n\n\n\ndata: 2\n\n\n") == std::vector<Ev>{{"a", "1"}, {"", "2"}});
}

TEST_CASE("SSE id is sticky, retry is reported with its event", "[sse]") {
  CHECK(decode("id: 7\nretry: 3000\ndata: a\n\ndata: b\n\nid\ndata: c\n\n") ==
        std::vector<Ev>{{"", "a", "7", 3000}, {"", "b", "7"}, {"", "c", ""}});
  // An id holding NUL and a retry that is not all digits (or overflows) are ignored.
  using namespace std::string_view_literals;
  CHECK(decode("id: 1\n\nid: x\0y\ndata: a\n\n"sv) == std::vector<Ev>{{"", "", "1"}, {"", "a", "1"}});
  CHECK(decode("retry: 12a\ndata: a\n\nretry: -5\ndata: b\n\nretry: 99999999999999999999999\ndata: c\n\n") ==
        std::vector<Ev>{{"", "a"}, {"", "b"}, {"", "c"}});
  CHECK(decode("retry: 12a\n\n").empty());
}

TEST_CASE("SSE unknown fields are ignored", "[sse]") {
  CHECK(decode("foo: bar\ndata: x\n\n") == std::vector<Ev>{{"", "x"}});
  CHECK(decode("foo: bar\n\n").empty());
  CHECK(decode("Data: x\n\n").empty());  // field names are case-sensitive
}

TEST_CASE("SSE never splits lines on Unicode separators", "[sse]") {
  const std::string data = "a\xE2\x80\xA8" "b\xE2\x80\xA9" "c\xC2\x85" "d\x0B\x0C" "e";  // U+2028, U+2029, NEL, VT, FF
  CHECK(decode("data: " + data + "\n\n") == std::vector<Ev>{{"", data}});
}

TEST_CASE("SSE a UTF-8 character split across feeds arrives intact", "[sse]") {
  CHECK(decode_chunks({"data: \xD0", "\xB8\xD0", "\xB7\n", "\n"}) == std::vector<Ev>{{"", "\xD0\xB8\xD0\xB7"}});
}

TEST_CASE("SSE finish() delivers a stream that lacks its final blank line", "[sse]") {
  CHECK(decode_chunks({"data: last"}, false).empty());
  CHECK(decode_chunks({"data: last"}) == std::vector<Ev>{{"", "last"}});
  CHECK(decode_chunks({"data: a\n\nevent: message_stop\ndata: {}\n"}, false) == std::vector<Ev>{{"", "a"}});
  CHECK(decode_chunks({"data: a\n\nevent: message_stop\ndata: {}\n"}) == std::vector<Ev>{{"", "a"}, {"message_stop", "{}"}});
  CHECK(decode_chunks({"event: x\r"}) == std::vector<Ev>{{"x", ""}});
}

TEST_CASE("SSE finish() on empty, blank-only or comment-only input dispatches nothing", "[sse]") {
  CHECK(decode_chunks(std::vector<std::string_view>{}).empty());
  CHECK(decode("").empty());
  CHECK(decode("\n\n\r\n\r").empty());
  CHECK(decode(": just a comment").empty());
  CHECK(decode("data: a\n\n\n").size() == 1);  // finish() after a dispatch adds nothing
}

TEST_CASE("SSE throws length_error when an event outgrows max_event_bytes", "[sse]") {
  const auto ignore = [](const SseEvent&) {};
  SECTION("one long line in one chunk") {
    SseDecoder decoder(16);
    CHECK_THROWS_AS(decoder.feed("data: 0123456789abcdef\n", ignore), std::length_error);
  }
  SECTION("an unterminated line growing across chunks") {
    SseDecoder decoder(16);
    decoder.feed("data: 01234", ignore);
    CHECK_THROWS_AS(decoder.feed("56789abcdef", ignore), std::length_error);
  }
  SECTION("many short data lines") {
    SseDecoder decoder(16);
    decoder.feed("data: 0123456\ndata: 0123456\n", ignore);
    CHECK_THROWS_AS(decoder.feed("data: 0123456\n", ignore), std::length_error);
  }
  SECTION("events within the limit pass, however many") {
    SseDecoder decoder(16);
    int n = 0;
    for (int i = 0; i < 100; ++i) decoder.feed("data: 0123456\n\n", [&](const SseEvent&) { ++n; });
    CHECK(n == 100);
  }
}

TEST_CASE("NDJSON splits on LF, strips CR, skips blank lines, finish() delivers the last line", "[sse]") {
  const std::string_view body = "{\"a\":1}\n\n  \t\n{\"b\":2}\r\n\r\n{\"c\":3}";
  const std::vector<std::string> expected = {"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"};
  CHECK(ndjson({body}) == expected);
  for (std::size_t k = 0; k <= body.size(); ++k) {
    INFO("split at " << k);
    CHECK(ndjson(split_at(body, k)) == expected);
  }
  std::vector<std::string> fed;
  NdjsonDecoder decoder;
  decoder.feed(body, [&](std::string_view line) { fed.emplace_back(line); });
  CHECK(fed.size() == 2);  // the unterminated line waits for finish()
  CHECK(ndjson({"{}\n", "   "}) == std::vector<std::string>{"{}"});
  NdjsonDecoder small(8);
  CHECK_THROWS_AS(small.feed("{\"long\":1}\n", [](std::string_view) {}), std::length_error);
}

// ---------------------------------------------------------------------------
// openai-node's line decoder vectors

TEST_CASE("SSE line splitting matches openai-node's line decoder vectors", "[sse]") {
  if (!have_fixtures()) return;
  const auto vectors = json::parse(read_file(wire_dir / "sse-edge-cases" / "line_decoder_vectors_openai_node.json"));
  REQUIRE(vectors.at("cases").size() >= 10);
  for (const auto& c : vectors.at("cases")) {
    const auto chunks = c.at("chunks").get<std::vector<std::string>>();
    INFO("chunks " << c.at("chunks").dump() << " flush " << c.at("flush").dump());
    CHECK(agentkit::providers::detail::sse_lines_for_testing(chunks, c.at("flush").get<bool>()) ==
          c.at("lines").get<std::vector<std::string>>());
  }
}

// ---------------------------------------------------------------------------
// Recorded streams

TEST_CASE("SSE and NDJSON fixtures decode the same under every chunking and carry valid JSON", "[sse]") {
  if (!have_fixtures()) return;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(wire_dir)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".sse" || ext == ".ndjson")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);

  std::mt19937 rng(20240601);
  std::size_t sse_files = 0, events = 0, json_events = 0, ndjson_files = 0, ndjson_lines = 0, bytes = 0;
  for (const auto& path : files) {
    const std::string body = read_file(path);
    const std::string name = fs::relative(path, wire_dir).string();
    const std::string_view whole = body;
    INFO(name);
    REQUIRE(!body.empty());
    bytes += body.size();

    if (path.extension() == ".ndjson") {
      const auto reference = ndjson({whole});
      CHECK(!reference.empty());
      for (const auto& line : reference) {
        INFO("line: " << line);
        CHECK_NOTHROW(json::parse(line));
      }
      std::size_t bad_split = std::string::npos;
      for (std::size_t k = 0; k <= body.size() && bad_split == std::string::npos; ++k) {
        if (ndjson(split_at(whole, k)) != reference) bad_split = k;
      }
      CHECK(bad_split == std::string::npos);
      for (int round = 0; round < 50; ++round) CHECK(ndjson(random_chunks(whole, rng)) == reference);
      ++ndjson_files;
      ndjson_lines += reference.size();
      continue;
    }

    const auto reference = decode(whole);
    CHECK(!reference.empty());
    std::size_t bad_split = std::string::npos;
    for (std::size_t k = 0; k <= body.size() && bad_split == std::string::npos; ++k) {
      if (!decodes_to(split_at(whole, k), reference)) bad_split = k;
    }
    CHECK(bad_split == std::string::npos);
    if (bad_split != std::string::npos) CHECK(decode_chunks(split_at(whole, bad_split)) == reference);
    int bad_rounds = 0;
    for (int round = 0; round < 50; ++round) {
      const auto chunks = random_chunks(whole, rng);
      if (!decodes_to(chunks, reference)) {
        ++bad_rounds;
        CHECK(decode_chunks(chunks) == reference);
      }
    }
    CHECK(bad_rounds == 0);

    for (const auto& e : reference) {
      INFO("event: " << Catch::StringMaker<Ev>::convert(e));
      // CRLF streams must not leak a CR into any field.
      CHECK((e.data + e.event + e.id).find('\r') == std::string::npos);
      if (e.data == "[DONE]" || !looks_like_json(e.data)) continue;
      CHECK_NOTHROW(json::parse(e.data));
      ++json_events;
    }
    ++sse_files;
    events += reference.size();
  }
  std::cout << "SSE fixture conformance: " << sse_files << " .sse files, " << events << " events (" << json_events
            << " JSON payloads parsed); " << ndjson_files << " .ndjson files, " << ndjson_lines
            << " lines; " << bytes << " bytes, each decoded whole, split at every byte and in 50 random chunkings\n";
  CHECK(sse_files >= 25);
  CHECK(ndjson_files >= 2);
}

TEST_CASE("SSE edge-case fixtures match their expected.json", "[sse]") {
  if (!have_fixtures()) return;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(wire_dir / "sse-edge-cases")) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".expected.json";
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const auto expected = json::parse(read_file(entry.path()));
    if (!expected.contains("events")) continue;
    const auto sse = entry.path().parent_path() / (name.substr(0, name.size() - suffix.size()) + ".sse");
    INFO(sse.filename().string());
    const auto events = decode(read_file(sse));
    REQUIRE(events.size() == expected["events"].size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      const auto& want = expected["events"][i];
      CHECK(events[i].event == (want["event"].is_null() ? "" : want["event"].get<std::string>()));
      if (want.contains("data")) CHECK(events[i].data == want["data"].get<std::string>());
      if (want.contains("json")) CHECK(json::parse(events[i].data) == want["json"]);
    }
    ++checked;
  }
  CHECK(checked >= 4);
}

TEST_CASE("SSE fixtures: facts stated in NOTES.md section A", "[sse]") {
  if (!have_fixtures()) return;
  const auto edge = wire_dir / "sse-edge-cases";

  CHECK(decode(read_file(edge / "multiline_data_with_empty_lines.sse")) ==
        std::vector<Ev>{{"ping", "{\n\"foo\":\n\n\ntrue}"}});
  CHECK(decode(read_file(edge / "event_without_data.sse")) == std::vector<Ev>{{"ping", ""}, {"completion", ""}});

  const auto u2028 = decode(read_file(edge / "u2028_line_separator_in_data.sse"));
  REQUIRE(u2028.size() == 3);
  CHECK(u2028[1].data == "{\"content\":\" \xE2\x80\xA8\"}");
  CHECK(json::parse(u2028[1].data)["content"] == " \xE2\x80\xA8");

  const auto split = json::parse(read_file(edge / "utf8_split_across_chunks.chunks.json"));
  std::vector<std::string> chunks;
  for (const auto& hex : split["chunks_hex"]) chunks.push_back(hex_bytes(hex.get<std::string>()));
  const auto utf8 = decode_chunks(std::vector<std::string_view>(chunks.begin(), chunks.end()), false);  // complete without finish()
  REQUIRE(utf8.size() == 1);
  CHECK(json::parse(utf8[0].data) == split["expected"][0]["json"]);

  const auto openrouter = decode(read_file(edge / "comments_crlf_split_escapes_RECONSTRUCTED.sse"));
  REQUIRE(openrouter.size() == 6);  // the comment-only block before them dispatches nothing
  CHECK(openrouter[0].retry == 3000);
  CHECK(openrouter[0].id == "1");
  CHECK(openrouter[5].id == "1");  // sticky
  CHECK(openrouter[5].data == "[DONE]");

  // Three Anthropic streams end without the blank line after message_stop:
  // feed() alone holds it back, finish() delivers it.
  for (const char* name : {"stream_text_then_tool_use_live.sse", "stream_max_tokens_mid_tool_input_live_padded.sse",
                           "stream_text_basic_sdk_fixture.sse"}) {
    INFO(name);
    const std::string body = read_file(wire_dir / "anthropic" / name);
    const auto fed_only = decode_chunks({body}, false);
    const auto finished = decode_chunks({body});
    REQUIRE(finished.size() == fed_only.size() + 1);
    CHECK(finished.back().event == "message_stop");
    CHECK(json::parse(finished.back().data)["type"] == "message_stop");
  }

  // Gemini's CRLF stream: data-only events, each a whole JSON response.
  const std::string gemini = read_file(wire_dir / "gemini" / "stream_function_call_thought_signature_live_crlf.sse");
  const auto gemini_events = decode(gemini);
  REQUIRE(!gemini_events.empty());
  std::size_t data_lines = 0;
  for (std::size_t at = gemini.find("data:"); at != std::string::npos; at = gemini.find("data:", at + 1)) ++data_lines;
  CHECK(gemini_events.size() == data_lines);
  for (const auto& e : gemini_events) CHECK(json::parse(e.data).contains("candidates"));
}
