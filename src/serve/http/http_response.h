// An HTTP response as handlers give it, and the bytes of its head: status line, the handler's
// headers, Content-Length or chunked framing, Connection: close when the connection ends after it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type and the framing
  std::string body;
  bool close = false;  // end the connection after this response
};

// "OK", "Not Found", ... ("Unknown" for a status without a phrase here).
const char* reason_phrase(int status);

// The head of a response: `content_length` when the body is framed by length, nullopt for a
// chunked body (HTTP/1.1) or one that ends with the connection (HTTP/1.0).
std::string response_head(int status, const std::string& content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::optional<std::size_t> content_length, bool chunked, bool close);

// `data` as one chunk of a chunked body ("" gives nothing: the last chunk is kLastChunk).
std::string chunk_of(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace plexus
