// The socket calls of plexus serve's HTTP layer: a listening socket with a deep backlog, writes
// under a time limit, and whether a peer is still connected. Linux, non-blocking sockets.
#pragma once
#include <chrono>
#include <string>
#include <string_view>

namespace plexus {

struct ListeningSocket {
  int fd = -1;
  int port = 0;  // the port bound (the one chosen when 0 was asked)
};

// A non-blocking socket listening on host:port (port 0: any free one) with SO_REUSEADDR (a restart
// binds while old connections linger in TIME_WAIT) but never SO_REUSEPORT (a second server on a
// port in use must fail, not share it). `backlog` is capped by the kernel (net.core.somaxconn).
// fd -1 when it cannot bind.
ListeningSocket listen_on(const std::string& host, int port, int backlog);

// Sends what the socket takes now: the bytes sent (0: full), -1 when the connection failed.
long send_some(int fd, std::string_view data);

// Sends all of `data`, waiting for room; false when the connection failed or no byte could be
// sent for `timeout`.
bool send_all(int fd, std::string_view data, std::chrono::milliseconds timeout);

// False once the peer closed or reset the connection (bytes it sent stay unread).
bool peer_alive(int fd);

}  // namespace plexus
