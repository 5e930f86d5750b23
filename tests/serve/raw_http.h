// A raw TCP client on loopback for the server tests: exact bytes out (what curl will not send: no
// Content-Length, two of them, headers a byte at a time, chunked bodies), and the answer read back
// under a deadline, so no test waits longer than it says.
#pragma once
#include <string>
#include <string_view>

namespace plexus::testing {

struct RawResponse {
  int status = 0;  // 0: no complete response within the deadline
  std::string head;  // status line and headers
  std::string body;  // decoded (Content-Length or chunked)
  bool closed = false;  // the server closed the connection after it (or without one)
  double seconds = 0;  // from read_response() to the response's end
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port; `blocking` false leaves the connect in progress (see connected()).
  explicit RawClient(int port, bool blocking = true);
  ~RawClient();
  RawClient(RawClient&& other) noexcept;
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Whether the TCP handshake completed within max_s (for a non-blocking connect).
  bool connected(double max_s);
  // Sends all of `bytes`; false when the server closed or max_s passed with the socket full.
  bool send(std::string_view bytes, double max_s = 10);
  // Reads one response (status line, headers, body by Content-Length or chunked, or to the
  // close; none when `head`: the answer to a HEAD request), waiting at most max_s.
  RawResponse read_response(double max_s, bool head = false);
  // Whether the server closed the connection within max_s (what it sends is read and dropped).
  bool closed_within(double max_s);
  // Whether the server ended the connection with a reset (not a clean close): bytes it had not
  // read when it closed, where an answer before them may be lost.
  bool reset() const { return reset_; }
  void close();

 private:
  // Reads more into buf_; false on close, error or the deadline.
  bool fill(double deadline_s);
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
  bool reset_ = false;
};

// The value of header `name` (case-insensitive) in a response head ("" when absent).
std::string header_of(const std::string& head, const std::string& name);

}  // namespace plexus::testing
