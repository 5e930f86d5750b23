// Response heads and chunk framing (serve/http/http_response.h).
#include "serve/http/http_response.h"

#include <cstdio>

namespace plexus {

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";  // nginx's: counted in /metrics, never read by the gone client
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string response_head(int status, const std::string& content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::optional<std::size_t> content_length, bool chunked, bool close) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  if (content_length) out += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  if (close) out += "Connection: close\r\n";
  return out + "\r\n";
}

std::string chunk_of(std::string_view data) {
  if (data.empty()) return "";
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  return out + "\r\n";
}

}  // namespace plexus
