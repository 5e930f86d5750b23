// An HTTP/1.x request as plexus serve's parser hands it over (framing resolved, body de-chunked),
// and the limits it is parsed under.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus {

struct HttpLimits {
  std::size_t max_request_line = 8u << 10;   // method, target and version; longer: 414
  std::size_t max_header_bytes = 64u << 10;  // the request line and every header; more: 431
  int max_headers = 100;                     // more: 431
  std::size_t max_body = 8u << 20;           // the body however it is framed; larger: 413
};

// A request body this large is parsed two at a time at most (the router), and the heap's free
// memory goes back to the system after it (the listener's malloc_trim).
inline constexpr std::size_t kLargeBody = 1u << 20;

struct HttpRequest {
  std::string method;  // as sent ("GET", "POST", ...)
  std::string target;  // as sent
  std::string path;    // the target's path, percent-decoded ("/v1/models/a b")
  std::string query;   // after '?', as sent
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;
  bool framed = false;       // Content-Length or chunked was given (a POST without either: 411)
  bool chunked = false;      // the body came in chunks
  bool keep_alive = true;    // the client allows another request on the connection
  bool expect_continue = false;  // "Expect: 100-continue"
  // When its last byte had been read (the server loop sets it; before any worker took it up).
  std::chrono::steady_clock::time_point received{};

  // The first header named `lower_name` (lower case), or null.
  const std::string* header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return &value;
    }
    return nullptr;
  }
};

}  // namespace plexus
