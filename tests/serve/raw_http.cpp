// The raw loopback client of the server tests (raw_http.h).
#include "raw_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace plexus::testing {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int millis_until(double deadline_s) {
  const double left = deadline_s - now_s();
  return left <= 0 ? 0 : static_cast<int>(left * 1000) + 1;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string header_of(const std::string& head, const std::string& name) {
  const std::string want = lower(name) + ":";
  std::size_t at = head.find('\n');
  while (at != std::string::npos && at + 1 < head.size()) {
    const std::size_t end = head.find('\n', at + 1);
    std::string line = head.substr(at + 1, (end == std::string::npos ? head.size() : end) - at - 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lower(line).rfind(want, 0) == 0) {
      std::string v = line.substr(want.size());
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
    at = end;
  }
  return "";
}

RawClient::RawClient(int port, bool blocking) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  if (blocking) ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

RawClient::RawClient(RawClient&& other) noexcept
    : fd_(other.fd_), buf_(std::move(other.buf_)), eof_(other.eof_), reset_(other.reset_) {
  other.fd_ = -1;
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawClient::connected(double max_s) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(max_s * 1000)) != 1) return false;
  int err = 0;
  socklen_t len = sizeof err;
  return ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

bool RawClient::send(std::string_view bytes, double max_s) {
  const double deadline = now_s() + max_s;
  while (!bytes.empty()) {
    if (fd_ < 0) return false;
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, millis_until(deadline)) != 1) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

bool RawClient::fill(double deadline_s) {
  if (fd_ < 0 || eof_) return false;
  for (;;) {
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      eof_ = true;  // reset by the server counts as closed
      reset_ = errno == ECONNRESET;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, millis_until(deadline_s)) != 1) return false;
  }
}

RawResponse RawClient::read_response(double max_s, bool head) {
  const double t0 = now_s(), deadline = t0 + max_s;
  RawResponse r;
  std::size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) {
      r.closed = eof_;
      return r;
    }
  }
  r.head = buf_.substr(0, head_end);
  std::size_t at = head_end + 4;
  const int status = std::atoi(r.head.c_str() + r.head.find(' ') + 1);
  const std::string length = header_of(r.head, "Content-Length");
  if (head || status < 200) {
    // no body
  } else if (lower(header_of(r.head, "Transfer-Encoding")) == "chunked") {
    for (;;) {
      std::size_t line_end;
      while ((line_end = buf_.find("\r\n", at)) == std::string::npos) {
        if (!fill(deadline)) return r;
      }
      const std::size_t size = std::strtoul(buf_.c_str() + at, nullptr, 16);
      while (buf_.size() < line_end + 2 + size + 2) {
        if (!fill(deadline)) return r;
      }
      r.body += buf_.substr(line_end + 2, size);
      at = line_end + 2 + size + 2;
      if (size == 0) break;
    }
  } else if (!length.empty()) {
    const std::size_t n = std::strtoul(length.c_str(), nullptr, 10);
    while (buf_.size() < at + n) {
      if (!fill(deadline)) return r;
    }
    r.body = buf_.substr(at, n);
    at += n;
  } else if (status != 204 && status != 304) {
    while (fill(deadline)) {
    }
    if (!eof_) return r;
    r.body = buf_.substr(at);
    at = buf_.size();
  }
  buf_.erase(0, at);
  r.status = status;
  r.seconds = now_s() - t0;
  if (lower(header_of(r.head, "Connection")) == "close") r.closed = closed_within(1);
  return r;
}

bool RawClient::closed_within(double max_s) {
  const double deadline = now_s() + max_s;
  while (fill(deadline)) buf_.clear();
  return eof_;
}

}  // namespace plexus::testing
