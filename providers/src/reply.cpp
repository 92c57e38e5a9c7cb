#include <agentkit/providers/reply.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "stream_errors.h"

namespace agentkit::providers {
namespace {

// "text/event-stream; charset=utf-8" -> "text/event-stream".
std::string media_type(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  while (!content_type.empty() && std::isspace(static_cast<unsigned char>(content_type.front()))) content_type.remove_prefix(1);
  while (!content_type.empty() && std::isspace(static_cast<unsigned char>(content_type.back()))) content_type.remove_suffix(1);
  std::string out(content_type);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}


}  // namespace

Json parse_provider_json(std::string_view text, std::string_view what, const JsonLimits& limits) {
  try {
    return parse_json(text, limits, what);
  } catch (const JsonError& e) {
    throw ProviderError(ErrorCode::protocol, e.what());
  }
}

ReplyReader::ReplyReader(const ReplyFormat& format, std::string_view url, std::unique_ptr<StreamAccumulator> stream,
                         JsonLimits limits)
    : format_(format),
      url_(url_for_messages(url)),
      stream_(std::move(stream)),
      limits_(limits),
      decoder_(limits.max_bytes),
      sink_([this](const SseEvent& e) {
        ++events_;
        stream_->on_event(e);
      }),
      lines_(limits.max_bytes),
      line_sink_([this](std::string_view line) {
        SseEvent e;
        e.data = line;
        sink_(e);
      }) {}

void ReplyReader::on_headers(const HttpResponse& head) {
  head_.status = head.status;
  head_.headers = head.headers;
  media_type_ = media_type(head.header("content-type").value_or(""));
  const std::string_view stream_type = format_.framing == Framing::ndjson ? "application/x-ndjson" : "text/event-stream";
  if (media_type_ == stream_type) {
    start(Mode::events);
  } else if (!media_type_.empty()) {
    start(Mode::whole);
  }
}

// The same error, its message naming where the reply came from.
void ReplyReader::fail(const ProviderError& error) const {
  throw error.with_message(std::string(error.what()) + " (from " + url_ + ")");
}

std::string ReplyReader::content_type_shown() const {
  return media_type_.empty() ? std::string("no content type") : "content type '" + media_type_ + "'";
}

void ReplyReader::start(Mode mode) {
  mode_ = mode;
  if (mode == Mode::events && !stream_) {
    fail(ProviderError(ErrorCode::protocol, std::string(format_.provider) +
                                                " answered a non-streaming request with an event stream (" +
                                                content_type_shown() + ")",
                       head_.status));
  }
  if (mode == Mode::events && !body_.empty()) feed(std::exchange(body_, std::string()));
}

void ReplyReader::feed(std::string_view bytes) {
  if (mode_ == Mode::unknown) {
    // No content type: the first byte that is not white space decides.
    const auto first = bytes.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
      body_.append(bytes);
      return;
    }
    // NDJSON lines are JSON too: a streaming request reads them as lines.
    const bool json = (bytes[first] == '{' || bytes[first] == '[') && format_.framing == Framing::sse;
    if (json || !stream_) {
      start(Mode::whole);
    } else {
      start(Mode::events);
    }
  }
  if (mode_ == Mode::whole) {
    if (body_.size() + bytes.size() > limits_.max_bytes) {
      fail(ProviderError(ErrorCode::protocol, std::string(format_.provider) + " reply body is over " +
                                                  std::to_string(limits_.max_bytes) + " bytes (" +
                                                  content_type_shown() + ")",
                         head_.status));
    }
    body_.append(bytes);
    return;
  }
  try {
    detail::read_json(std::string(format_.provider) + " stream event", [&] {
      if (format_.framing == Framing::ndjson) {
        lines_.feed(bytes, line_sink_);
      } else {
        decoder_.feed(bytes, sink_);
      }
    });
  } catch (const ProviderError& e) {
    // An error event mid-stream: the tokens reported before it were spent.
    const Usage spent = e.usage() == Usage{} ? stream_->finish().usage : e.usage();
    fail(ProviderError(e.code(), e.what(), e.http_status(), e.retryable(), e.retry_after(), spent));
  } catch (const std::length_error& e) {
    fail(ProviderError(ErrorCode::protocol, std::string(format_.provider) + " stream: " + e.what()));
  }
}

ModelResponse ReplyReader::finish() {
  if (mode_ == Mode::unknown) start(stream_ ? Mode::events : Mode::whole);
  return mode_ == Mode::events ? finish_events() : finish_whole();
}

ModelResponse ReplyReader::finish_events() {
  const std::string provider(format_.provider);
  std::string cut;
  try {
    detail::read_json(provider + " stream event", [&] {
      if (format_.framing == Framing::ndjson) {
        lines_.finish(line_sink_);
      } else {
        decoder_.finish(sink_);
      }
    });
  } catch (const ProviderError& e) {
    // The last event lacked its blank line and did not decode: it was cut off.
    if (stream_->done() || e.code() != ErrorCode::protocol) fail(e);
    cut = "; its last event was cut off";
  }
  ModelResponse response = detail::read_json(provider + " stream", [&] { return stream_->finish(); });
  if (stream_->done()) return response;
  fail(ProviderError(ErrorCode::truncated,
                     provider + " stream ended before its terminal event (" + std::string(format_.terminal_event) +
                         ") after " + std::to_string(events_) + " events" + cut + "; the reply is incomplete",
                     head_.status, false, std::nullopt, response.usage));
}

ModelResponse ReplyReader::finish_whole() {
  const std::string provider(format_.provider);
  const auto not_a_reply = [&](const std::string& why) {
    fail(ProviderError(ErrorCode::protocol,
                       provider + " reply is not " + (stream_ ? "an event stream or a JSON completion" : "JSON") +
                           " (" + content_type_shown() + ", " + std::to_string(body_.size()) + " bytes: " + why +
                           ")",
                       head_.status));
  };
  Json body;
  try {
    body = parse_json(body_, limits_, provider + " reply body");
  } catch (const JsonError& e) {
    // Past a limit, or not JSON at all: an HTML page, plain text.
    not_a_reply(e.what());
  }
  if (!body.is_object()) not_a_reply("not a JSON object");
  // {"error": {...}} (OpenAI and compatibles), {"type": "error", "error": {...}} (Anthropic).
  const auto error = body.find("error");
  const auto type = body.find("type");
  const bool typed_error = type != body.end() && type->is_string() && type->get_ref<const std::string&>() == "error";
  if ((error != body.end() && !error->is_null()) || typed_error) {
    throw detail::reply_error(error != body.end() ? *error : Json(), head_, url_);
  }
  try {
    return detail::read_json(provider + " response", [&] { return format_.parse_body(body); });
  } catch (const ProviderError& e) {
    fail(e);
  }
}

}  // namespace agentkit::providers
