// A small blocking HTTP/1.1 client over POSIX sockets for the OpenAI load generator: plain http
// only (an https URL is refused), one connection per request (Connection: close), bodies by
// Content-Length, chunked transfer coding or read to the close, handed to a callback as they
// arrive (server-sent events are parsed by the caller, line by line).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::bench {

struct HttpUrl {
  std::string host;       // "127.0.0.1", "localhost", "[::1]" without the brackets
  int port = 80;
  std::string base_path;  // "" or "/prefix" (no trailing '/'): request paths are appended
  std::string text;       // as given, for messages
};

// "http://HOST[:PORT][/PATH]". InputError "`what`: ..." for https ("plain http only") and
// anything else that is not such a URL.
HttpUrl parse_http_url(const std::string& url, const std::string& what);

struct HttpReply {
  int status = 0;          // 0: no response (error says why)
  std::string error;       // connect refused, timed out, closed before a complete response, ...
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;        // the decoded body (also when streamed to on_data)
  std::string header(const std::string& lower_name) const;    // "" when absent
};

struct HttpCall {
  std::string method = "GET";
  std::string path;   // appended to the URL's base path, e.g. "/v1/models"
  std::string body;   // sent with Content-Type: application/json when not empty
  std::vector<std::string> headers;  // extra "Name: value" lines
  double timeout_s = 60;  // most seconds without progress (connect, send, each read)
  // Called with each piece of the decoded body as it arrives (after the status line and
  // headers); the pieces are also kept in HttpReply::body.
  std::function<void(std::string_view)> on_data;
};

// One request on a fresh connection. Never throws for network trouble: HttpReply::error says it.
HttpReply http_request(const HttpUrl& url, const HttpCall& call);

}  // namespace plexus::bench
