// The HttpExchange of a request read from a socket, on its worker thread: a whole response is
// kept as bytes for the server loop to write; a stream is written here, chunked for HTTP/1.1,
// each write failing once the client is gone or takes nothing for the write timeout.
#pragma once
#include <chrono>
#include <string>

#include "serve/http/http_exchange.h"

namespace plexus {

class SocketExchange : public HttpExchange {
 public:
  SocketExchange(int fd, HttpRequest request, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(std::move(request)), write_timeout_(write_timeout) {}

  const HttpRequest& request() const override { return request_; }
  void respond(HttpResponse response) override;
  bool begin_stream(int status, const std::string& content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers) override;
  bool write(std::string_view data) override;
  bool client_alive() override;

  bool answered() const { return answered_; }
  // After the handler: ends a stream (its last chunk), and gives the bytes the loop is to write
  // (empty after a stream) and whether the connection closes after them.
  std::string finish();
  bool close_after() const { return close_; }

 private:
  int fd_;
  HttpRequest request_;
  std::chrono::milliseconds write_timeout_;
  bool answered_ = false, streaming_ = false, chunked_ = false, ok_ = true, close_ = false;
  std::string out_;
};

}  // namespace plexus
