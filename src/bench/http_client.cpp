// Blocking HTTP/1.1 requests over POSIX sockets (bench/http_client.h).
#include "bench/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace plexus::bench {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// A connected socket closed on scope exit.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` on fd up to timeout_s; false on timeout or error.
bool wait_for(int fd, short events, double timeout_s) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(timeout_s * 1000) + 1);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// A non-blocking connect to host:port, finished within timeout_s; -1 with `error` set otherwise.
int connect_to(const HttpUrl& url, double timeout_s, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found); rc != 0) {
    error = "cannot resolve host '" + url.host + "': " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS && wait_for(fd, POLLOUT, timeout_s)) {
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error == 0) break;
      error = "cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " + std::strerror(so_error);
    } else {
      error = "cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " +
              (errno == EINPROGRESS ? std::string("timed out") : std::string(std::strerror(errno)));
    }
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  return fd;
}

bool send_all(int fd, const std::string& data, double timeout_s) {
  std::size_t at = 0;
  while (at < data.size()) {
    const ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL);
    if (n > 0) {
      at += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, timeout_s)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Reads what is there into `buf`; 1 read, 0 closed, -1 error or timeout (`error` set).
int read_some(int fd, std::string& buf, double timeout_s, std::string& error) {
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf.append(chunk, static_cast<std::size_t>(n));
      return 1;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error = std::string("reading the response: ") + std::strerror(errno);
      return -1;
    }
    if (!wait_for(fd, POLLIN, timeout_s)) {
      error = "no answer within " + std::to_string(static_cast<int>(timeout_s)) + " s";
      return -1;
    }
  }
}

}  // namespace

std::string HttpReply::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

HttpUrl parse_http_url(const std::string& text, const std::string& what) {
  if (text.rfind("https://", 0) == 0) {
    throw InputError(what + ": '" + text + "' is https: the load generator speaks plain http only (put a local proxy in front, "
                     "or use the server's http port)");
  }
  if (text.rfind("http://", 0) != 0) throw InputError(what + ": '" + text + "' is not an http:// URL (e.g. http://127.0.0.1:8000)");
  HttpUrl u;
  u.text = text;
  std::string rest = text.substr(7);
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!u.base_path.empty() && u.base_path.back() == '/') u.base_path.pop_back();
  std::string port;
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) throw InputError(what + ": '" + text + "': unclosed '[' in the host");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw InputError(what + ": '" + text + "': expected ':PORT' after the host");
      port = authority.substr(close + 2);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw InputError(what + ": '" + text + "' names no host");
  if (!port.empty()) {
    if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) < 1 ||
        std::stoi(port) > 65535) {
      throw InputError(what + ": '" + text + "': the port must be a number from 1 to 65535");
    }
    u.port = std::stoi(port);
  }
  return u;
}

HttpReply http_request(const HttpUrl& url, const HttpCall& call) {
  HttpReply reply;
  const int fd = connect_to(url, call.timeout_s, reply.error);
  if (fd < 0) return reply;
  const Socket socket(fd);
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string req = call.method + " " + url.base_path + call.path + " HTTP/1.1\r\nHost: " + (v6 ? "[" + url.host + "]" : url.host) +
                    ":" + std::to_string(url.port) + "\r\nConnection: close\r\nAccept: */*\r\nUser-Agent: plexus-bench\r\n";
  for (const std::string& h : call.headers) req += h + "\r\n";
  if (!call.body.empty() || call.method == "POST") {
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(call.body.size()) + "\r\n";
  }
  req += "\r\n" + call.body;
  if (!send_all(fd, req, call.timeout_s)) {
    reply.error = std::string("sending the request: ") + std::strerror(errno);
    return reply;
  }
  std::string buf;
  std::size_t head_end = std::string::npos;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    const int r = read_some(fd, buf, call.timeout_s, reply.error);
    if (r <= 0) {
      if (r == 0) reply.error = buf.empty() ? "the server closed the connection without answering" : "the server closed the connection mid-header";
      return reply;
    }
    if (buf.size() > (1 << 20)) {
      reply.error = "response headers over 1 MiB";
      return reply;
    }
  }
  const std::string head = buf.substr(0, head_end);
  buf.erase(0, head_end + 4);
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) {
    reply.error = "not an HTTP response: '" + status_line.substr(0, 80) + "'";
    return reply;
  }
  const int status = std::atoi(status_line.c_str() + 9);
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) reply.headers.emplace_back(lower(trim(line.substr(0, colon))), trim(line.substr(colon + 1)));
  }
  auto deliver = [&](std::string_view piece) {
    if (piece.empty()) return;
    reply.body.append(piece);
    if (call.on_data) call.on_data(piece);
  };
  const bool chunked = lower(reply.header("transfer-encoding")).find("chunked") != std::string::npos;
  const std::string length_text = reply.header("content-length");
  if (chunked) {
    for (;;) {
      std::size_t eol;
      while ((eol = buf.find("\r\n")) == std::string::npos) {
        if (read_some(fd, buf, call.timeout_s, reply.error) <= 0) {
          if (reply.error.empty()) reply.error = "the server closed the connection mid-body (chunked)";
          return reply;
        }
      }
      const std::size_t size = std::strtoul(buf.substr(0, eol).c_str(), nullptr, 16);
      buf.erase(0, eol + 2);
      if (size == 0) break;
      while (buf.size() < size + 2) {
        if (read_some(fd, buf, call.timeout_s, reply.error) <= 0) {
          if (reply.error.empty()) reply.error = "the server closed the connection mid-body (chunked)";
          return reply;
        }
      }
      deliver(std::string_view(buf).substr(0, size));
      buf.erase(0, size + 2);
    }
  } else if (!length_text.empty()) {
    const std::size_t length = std::strtoull(length_text.c_str(), nullptr, 10);
    std::size_t got = 0;
    for (;;) {
      const std::size_t take = std::min(buf.size(), length - got);
      deliver(std::string_view(buf).substr(0, take));
      got += take;
      buf.clear();
      if (got >= length) break;
      if (read_some(fd, buf, call.timeout_s, reply.error) <= 0) {
        if (reply.error.empty()) reply.error = "the server closed the connection mid-body";
        return reply;
      }
    }
  } else {
    for (;;) {
      deliver(buf);
      buf.clear();
      const int r = read_some(fd, buf, call.timeout_s, reply.error);
      if (r == 0) break;
      if (r < 0) return reply;
    }
  }
  reply.status = status;
  return reply;
}

}  // namespace plexus::bench
