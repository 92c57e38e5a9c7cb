// Stream decoder throughput: a ~10 MB body, built by repeating a recorded
// Chat Completions stream, fed to SseDecoder (and NdjsonDecoder) in 16 KB
// chunks as a socket would deliver it. Prints MB/s (10^6 bytes, median of 9
// runs); exits non-zero when the SSE target is missed. Run with `make bench`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <agentkit/providers/sse.h>

#ifndef AGENTKIT_SHARED_DIR
#define AGENTKIT_SHARED_DIR "../shared"
#endif

namespace {

constexpr std::size_t kBodyBytes = 10u << 20;
constexpr std::size_t kChunkBytes = 16u << 10;
constexpr double kTargetMBps = 200.0;

std::size_t sink = 0;  // printed at the end so the work is not optimised away

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A Chat Completions text stream shaped like the recorded ones, for when
// ../shared is not there.
std::string synthetic_stream() {
  std::string s;
  const char* words[] = {"The", " weather", " in", " San", " Francisco", " is", " 63", "°F", " and", " sunny", "."};
  s += "data: {\"id\":\"chatcmpl-synthetic\",\"object\":\"chat.completion.chunk\",\"created\":1727000000,"
       "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_f85bea6784\",\"choices\":[{\"index\":0,"
       "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  for (const char* w : words) {
    s += "data: {\"id\":\"chatcmpl-synthetic\",\"object\":\"chat.completion.chunk\",\"created\":1727000000,"
         "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_f85bea6784\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\"";
    s += w;
    s += "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  }
  s += "data: {\"id\":\"chatcmpl-synthetic\",\"object\":\"chat.completion.chunk\",\"created\":1727000000,"
       "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_f85bea6784\",\"choices\":[{\"index\":0,"
       "\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
  return s;
}

std::string repeat_to_size(const std::string& unit) {
  std::string body;
  body.reserve(kBodyBytes + unit.size());
  while (body.size() < kBodyBytes) body += unit;
  return body;
}

std::string to_crlf(std::string_view lf) {
  std::string out;
  out.reserve(lf.size() + lf.size() / 8);
  for (const char c : lf) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

// The data payloads of an SSE body, one per line: an Ollama-like NDJSON body.
std::string to_ndjson(std::string_view sse) {
  std::string out;
  agentkit::providers::SseDecoder decoder;
  const auto collect = [&](const agentkit::providers::SseEvent& e) {
    if (e.data == "[DONE]") return;
    out += e.data;
    out += '\n';
  };
  decoder.feed(sse, collect);
  decoder.finish(collect);
  return out;
}

// Median MB/s over several runs of `decode_once(body)`.
template <class F>
double median_mbps(const std::string& body, F&& decode_once) {
  using clock = std::chrono::steady_clock;
  decode_once(body);  // warm up: buffers reach their steady capacity
  std::vector<double> runs;
  for (int i = 0; i < 9; ++i) {
    const auto start = clock::now();
    decode_once(body);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    runs.push_back(static_cast<double>(body.size()) / 1e6 / seconds);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

void decode_sse(const std::string& body) {
  agentkit::providers::SseDecoder decoder;
  const agentkit::providers::SseDecoder::Sink count = [](const agentkit::providers::SseEvent& e) {
    sink += e.data.size() + 1;
  };
  const std::string_view all = body;
  for (std::size_t at = 0; at < all.size(); at += kChunkBytes) decoder.feed(all.substr(at, kChunkBytes), count);
  decoder.finish(count);
}

void decode_ndjson(const std::string& body) {
  agentkit::providers::NdjsonDecoder decoder;
  const agentkit::providers::NdjsonDecoder::Sink count = [](std::string_view line) { sink += line.size() + 1; };
  const std::string_view all = body;
  for (std::size_t at = 0; at < all.size(); at += kChunkBytes) decoder.feed(all.substr(at, kChunkBytes), count);
  decoder.finish(count);
}

}  // namespace

int main() {
  const char* env_dir = std::getenv("AGENTKIT_SHARED_DIR");
  const std::string shared = env_dir && *env_dir ? env_dir : AGENTKIT_SHARED_DIR;
  const std::string path = shared + "/fixtures/wire/openai-chat/stream_tool_call_strict_with_usage_live.sse";
  std::string unit = read_file(path);
  const char* source = "recorded openai-chat/stream_tool_call_strict_with_usage_live.sse";
  if (unit.empty()) {
    std::printf("cannot read %s: using a synthetic stream\n", path.c_str());
    unit = synthetic_stream();
    source = "synthetic Chat Completions stream";
  }
  const std::string lf = repeat_to_size(unit);
  const std::string crlf = to_crlf(lf);
  const std::string ndjson = to_ndjson(lf);
  std::size_t events = 0;
  {
    agentkit::providers::SseDecoder decoder;
    const auto count = [&](const agentkit::providers::SseEvent&) { ++events; };
    decoder.feed(lf, count);
    decoder.finish(count);
  }

  const double lf_mbps = median_mbps(lf, decode_sse);
  const double crlf_mbps = median_mbps(crlf, decode_sse);
  const double ndjson_mbps = median_mbps(ndjson, decode_ndjson);

  std::printf("input: %s, repeated to %.1f MB (%zu events), fed in %zu KB chunks\n", source,
              static_cast<double>(lf.size()) / 1e6, events, kChunkBytes >> 10);
  std::printf("%-44s %10s %10s\n", "benchmark (stream decoding)", "MB/s", "target");
  std::printf("%-44s %10.0f %10s\n", "SseDecoder, LF line ends", lf_mbps, ">= 200");
  std::printf("%-44s %10.0f %10s\n", "SseDecoder, CRLF line ends", crlf_mbps, ">= 200");
  std::printf("%-44s %10.0f %10s\n", "NdjsonDecoder (the same payloads)", ndjson_mbps, "-");
  const bool ok = lf_mbps >= kTargetMBps && crlf_mbps >= kTargetMBps;
  std::printf("targets %s (checksum %zu)\n", ok ? "met" : "MISSED", sink);
  return ok ? 0 : 1;
}
