// Listening, sending and peeking on sockets (serve/http/socket_io.h).
#include "serve/http/socket_io.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace plexus {

ListeningSocket listen_on(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return {};
  ListeningSocket out;
  for (addrinfo* a = found; a && out.fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      ::close(fd);
      continue;
    }
    out.fd = fd;
    out.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  ::freeaddrinfo(found);
  return out;
}

long send_some(int fd, std::string_view data) {
  for (;;) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

bool send_all(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  auto last_progress = std::chrono::steady_clock::now();
  while (!data.empty()) {
    const long n = send_some(fd, data);
    if (n < 0) return false;
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      last_progress = std::chrono::steady_clock::now();
      continue;
    }
    const auto left = timeout - (std::chrono::steady_clock::now() - last_progress);
    if (left <= std::chrono::milliseconds(0)) return false;
    pollfd p{fd, POLLOUT, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(wait, 1000))) < 0 && errno != EINTR) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  }
  return true;
}

bool peer_alive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

}  // namespace plexus
