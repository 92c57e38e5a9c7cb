// serve_stdio: one MCP session over newline-delimited JSON-RPC on a pair of
// file descriptors.
#include <errno.h>
#include <unistd.h>

#include <string>

#include <agentkit/providers/mcp_server.h>

#include "mcp_detail.h"

namespace agentkit::providers {
namespace {

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client is gone: EOF on our input ends the session
    done += static_cast<std::size_t>(n);
  }
}

void handle_line(McpServerSession& session, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  std::string problem;
  if (auto message = mcp_detail::parse_message(line, problem)) {
    session.receive(*message);
  } else {
    session.parse_error(problem);
  }
}

}  // namespace

void serve_stdio(McpServer& server, McpStdioServeOptions options) {
  const int out = options.out_fd;
  auto session = server.open_session([out](const Json& message) {
    write_all(out, message.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
  });
  std::string line;
  bool skipping = false;  // inside a line over the cap, until its newline
  char chunk[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(options.in_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view rest(chunk, static_cast<std::size_t>(n));
    while (!rest.empty()) {
      const auto newline = rest.find('\n');
      const std::string_view piece = rest.substr(0, newline);
      if (!skipping) {
        if (line.size() + piece.size() > options.max_line_bytes) {
          session->parse_error("is longer than " + std::to_string(options.max_line_bytes) + " bytes");
          line.clear();
          skipping = true;
        } else {
          line.append(piece);
        }
      }
      if (newline == std::string_view::npos) break;
      if (!skipping) handle_line(*session, line);
      line.clear();
      skipping = false;
      rest.remove_prefix(newline + 1);
    }
  }
  if (!skipping && !line.empty()) handle_line(*session, line);
  session->close();
}

}  // namespace agentkit::providers
