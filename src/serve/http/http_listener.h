// plexus serve's HTTP/1.1 server loop. One thread accepts and reads every connection without
// blocking (epoll) and holds each request to a deadline (head and body), the open connections to
// a cap (an idle, unfinished, finished or slowly read one makes room for a new client) and the
// request bodies held to a memory budget; complete requests go to a pool of worker threads. Whole
// responses go back to the loop to be written within a deadline; streams are written by their
// worker under a write timeout. stop() closes every connection within its grace, whatever the
// clients do. After a request with a large body the heap's free memory goes back to the system
// (malloc_trim), so a burst leaves no peak.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/http/http_exchange.h"
#include "serve/http/http_request.h"
#include "serve/http/http_response.h"

namespace plexus {

struct HttpListenerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  HttpLimits limits;
  int workers = 16;           // requests handled at once (a stream holds a worker for its life)
  int max_connections = 1024;  // connections open at once
  std::chrono::milliseconds request_timeout{10000};  // a request's head and body, from its first byte
  std::chrono::milliseconds keep_alive{5000};        // an idle connection between requests
  // A stream's write without progress; a whole response must be taken within the larger of
  // this and request_timeout from when it is ready, however the client trickles it out.
  std::chrono::milliseconds write_timeout{30000};
};

// Handles a complete request on a worker thread.
using HttpHandler = std::function<void(HttpExchange&)>;
// The response to a request the server refuses itself (malformed, too large, too slow, no room,
// a handler that failed): its status, what was wrong, and the request's path when it was read
// ("" otherwise). Called on the loop's thread and the workers'.
using HttpErrorPage = std::function<HttpResponse(int status, const std::string& message, const std::string& path)>;

class HttpListener {
 public:
  HttpListener(HttpListenerOptions options, HttpHandler handler, HttpErrorPage error_page);
  ~HttpListener();  // stop() without grace
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Listens (backlog: the larger of SOMAXCONN, the workers and the connection cap) and raises the
  // process's open-file limit to fit the connection cap where it can. The port, or -1 when the
  // address cannot be bound.
  int bind();
  // Starts the loop and the workers (after bind).
  void start();
  // Closes the listener and the connections that wait for or send a request at once; answers
  // already under way (a handler running, a response being written) may finish within `grace`
  // (requests still waiting for a worker get 503), then every connection closes (streams and writes still under way fail), the handlers still
  // running are waited for and the threads end. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // The connection cap in force: the one asked, lowered where the open-file limit is smaller.
  int max_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
