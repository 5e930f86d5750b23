// A request's answer over its socket (serve/http/socket_exchange.h).
#include "serve/http/socket_exchange.h"

#include "serve/http/socket_io.h"

namespace plexus {

void SocketExchange::respond(HttpResponse response) {
  if (answered_) return;
  answered_ = true;
  close_ = response.close || !request_.keep_alive;
  // HTTP/1.0 keeps the connection only when the response says so.
  if (!close_ && request_.minor_version == 0) response.headers.emplace_back("Connection", "keep-alive");
  out_ = response_head(response.status, response.content_type, response.headers, response.body.size(), false, close_);
  if (request_.method != "HEAD") out_ += response.body;
}

bool SocketExchange::begin_stream(int status, const std::string& content_type,
                                  const std::vector<std::pair<std::string, std::string>>& headers) {
  if (answered_) return false;
  answered_ = streaming_ = true;
  chunked_ = request_.minor_version >= 1;
  close_ = !chunked_ || !request_.keep_alive;  // HTTP/1.0: the body ends with the connection
  ok_ = send_all(fd_, response_head(status, content_type, headers, std::nullopt, chunked_, close_), write_timeout_);
  return ok_;
}

bool SocketExchange::write(std::string_view data) {
  if (!streaming_ || !ok_) return false;
  if (data.empty()) return true;
  ok_ = send_all(fd_, chunked_ ? chunk_of(data) : std::string(data), write_timeout_);
  return ok_;
}

bool SocketExchange::client_alive() { return ok_ && peer_alive(fd_); }

std::string SocketExchange::finish() {
  if (streaming_) {
    if (ok_ && chunked_) ok_ = send_all(fd_, kLastChunk, write_timeout_);
    if (!ok_) close_ = true;
  }
  return std::move(out_);
}

}  // namespace plexus
