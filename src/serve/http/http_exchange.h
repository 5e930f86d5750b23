// One request and the ways to answer it, as a handler sees them: a whole response (written by
// the server loop), or a stream of pieces written as they come (server-sent events). The server
// loop implements it over a socket; the fuzz harness and tests record what a handler did.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/http/http_request.h"
#include "serve/http/http_response.h"

namespace plexus {

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;
  // The whole response (once; nothing after it). A HEAD request gets its head only.
  virtual void respond(HttpResponse response) = 0;
  // A streamed response: the head now (chunked for HTTP/1.1), then write() pieces; the stream
  // ends when the handler returns. False once the client is gone.
  virtual bool begin_stream(int status, const std::string& content_type,
                            const std::vector<std::pair<std::string, std::string>>& headers) = 0;
  // False once the client is gone or took nothing for the write timeout.
  virtual bool write(std::string_view data) = 0;
  // False once the client closed its connection.
  virtual bool client_alive() = 0;
};

}  // namespace plexus
