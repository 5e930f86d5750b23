// The server loop (epoll), its connections' states and deadlines, and the worker pool
// (serve/http/http_listener.h).
#include "serve/http/http_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "serve/http/request_parser.h"
#include "serve/http/socket_exchange.h"
#include "serve/http/socket_io.h"

namespace plexus {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kSweepEvery{100};    // how often deadlines are checked
constexpr std::chrono::milliseconds kLinger{1000};       // reading after a refusal before closing
constexpr std::size_t kLingerBytes = 1u << 20;           // ... and at most this much
constexpr std::chrono::milliseconds kAcceptPause{100};   // out of file descriptors: wait, then accept again
constexpr int kFdReserve = 64;  // descriptors beyond the connections: listener, epoll, model files, logs
constexpr int kOverCapMax = kFdReserve / 2;  // connections turned away (503) lingering past the cap at once
constexpr std::size_t kMinBodyBudget = 256u << 20;  // request body bytes held at once, at least
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string seconds_text(std::chrono::milliseconds ms) {
  std::string s = std::to_string(static_cast<double>(ms.count()) / 1000);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

struct Connection {
  enum class State {
    kIdle,       // between requests (or new): waiting for a first byte
    kReading,    // a request under way, held to its deadline
    kBusy,       // a worker has it (not watched by the loop)
    kWriting,    // the loop writes a response
    kLingering,  // refused and half-closed: reading what the client still sends, then closing
  };
  Connection(int fd_in, const HttpLimits& limits) : fd(fd_in), parser(limits) {}
  int fd;
  State state = State::kIdle;
  bool watched = false;  // registered with epoll
  RequestParser parser;
  std::string in;  // received, not parsed yet
  std::string out;  // to write
  std::size_t out_at = 0;
  bool close_after = false;
  bool continue_sent = false;
  bool over_cap = false;  // turned away for want of room: lingers outside the connection cap
  Clock::time_point since, deadline;  // when the state began; when it times out
  std::size_t reserved = 0;  // of the body budget
  std::size_t lingered = 0;
};

struct HttpListener::Impl {
  HttpListenerOptions options;
  HttpHandler handler;
  HttpErrorPage error_page;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  int max_connections = 0;
  std::size_t body_budget = 0;  // max(kMinBodyBudget, 4 x max_body)
  std::chrono::milliseconds response_time{0};  // a whole response written by the loop: max(request, write timeout)
  std::thread loop_thread;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  bool stopped = false;
  Clock::time_point grace_end;  // stopping: answers under way may be written until then

  // Complete requests for the workers.
  struct Work {
    std::shared_ptr<Connection> conn;
    HttpRequest request;
  };
  std::mutex work_mutex;
  std::condition_variable work_cv;
  std::deque<Work> work;
  bool work_closed = false;

  // Connections the workers are done with, for the loop.
  struct Returned {
    std::shared_ptr<Connection> conn;
    std::string out;
    bool close = false;
  };
  std::mutex back_mutex;
  std::vector<Returned> back;

  // The loop's own state.
  std::unordered_map<int, std::shared_ptr<Connection>> conns;
  int busy = 0;
  int over_cap = 0;  // connections with over_cap set
  std::size_t body_held = 0;
  bool accepting = false;
  Clock::time_point accept_again;
  std::vector<char> read_buf = std::vector<char>(1 << 16);

  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  // --- epoll registration ---
  void watch(Connection& c, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = c.fd;
    ::epoll_ctl(epoll_fd, c.watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c.fd, &ev);
    c.watched = true;
  }
  void unwatch(Connection& c) {
    if (c.watched) ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    c.watched = false;
  }
  void set_accepting(bool on) {
    if (on == accepting || listen_fd < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd;
    ::epoll_ctl(epoll_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listen_fd, &ev);
    accepting = on;
  }

  void release_budget(Connection& c) noexcept {
    body_held -= c.reserved;
    c.reserved = 0;
  }

  void close_conn(const std::shared_ptr<Connection>& c) noexcept {
    if (c->fd < 0) return;
    release_budget(*c);
    if (c->over_cap) --over_cap;
    c->over_cap = false;
    unwatch(*c);
    conns.erase(c->fd);
    ::close(c->fd);
    c->fd = -1;
  }

  // An error page as the bytes of a whole response after which the connection closes.
  std::string error_bytes(int status, const std::string& message, const std::string& path) const {
    const HttpResponse r = error_page(status, message, path);
    return response_head(r.status, r.content_type, r.headers, r.body.size(), false, true) + r.body;
  }

  std::string cap_message(const std::string& what) const {
    return "the server is at its limit of " + std::to_string(max_connections) + " connections (--max-connections)" + what;
  }

  void become_idle(Connection& c, std::chrono::milliseconds wait) {
    c.state = Connection::State::kIdle;
    c.since = Clock::now();
    c.deadline = c.since + wait;
    if (c.out.capacity() > (1u << 16)) std::string().swap(c.out);
    if (c.in.empty() && c.in.capacity() > (1u << 16)) std::string().swap(c.in);
    watch(c, EPOLLIN | EPOLLRDHUP);
  }

  // Writes what the socket takes of c.out; then lingers, or waits for the next request. The
  // deadline stays the one the response got when it became ready: progress does not renew it.
  void flush(const std::shared_ptr<Connection>& c) {
    while (c->out_at < c->out.size()) {
      const long n = send_some(c->fd, std::string_view(c->out).substr(c->out_at));
      if (n < 0) return close_conn(c);
      if (n == 0) return;  // EPOLLOUT brings it back
      c->out_at += static_cast<std::size_t>(n);
    }
    c->out.clear();
    c->out_at = 0;
    if (c->close_after || stopping) return linger(c);
    become_idle(*c, options.keep_alive);
    process_input(c);  // a pipelined request may wait in c->in
  }

  // The response is ready: the client has response_time to take it whole.
  void start_writing(const std::shared_ptr<Connection>& c) {
    c->state = Connection::State::kWriting;
    c->since = Clock::now();
    c->deadline = c->since + response_time;
    watch(*c, EPOLLOUT);
    flush(c);
  }

  // No more requests: half-close, read what the client still sends for a while (so it reads the
  // answer instead of a reset), then close.
  void linger(const std::shared_ptr<Connection>& c) {
    release_budget(*c);
    ::shutdown(c->fd, SHUT_WR);
    c->state = Connection::State::kLingering;
    c->since = Clock::now();
    c->deadline = c->since + kLinger;
    c->lingered = 0;
    watch(*c, EPOLLIN | EPOLLRDHUP);
  }

  // Answers a request the loop refuses, and closes the connection after it.
  void refuse(const std::shared_ptr<Connection>& c, int status, const std::string& message) {
    c->out = error_bytes(status, message, c->parser.request().path);
    c->out_at = 0;
    c->close_after = true;
    release_budget(*c);
    start_writing(c);
  }

  // Answers 503 to a connection there is no room for: written and lingered on like any refusal,
  // outside the cap (kOverCapMax such at once); beyond those, sent as far as the socket takes it
  // at once and closed.
  void turn_away(const std::shared_ptr<Connection>& c, const std::string& message) {
    if (over_cap >= kOverCapMax) {
      send_some(c->fd, error_bytes(503, message, c->parser.request().path));
      return close_conn(c);
    }
    c->over_cap = true;
    ++over_cap;
    refuse(c, 503, message);
  }

  // The loop's work on one connection failed (out of memory): that connection alone ends, with a
  // 500 when no answer to it was begun. Never one a worker has.
  void fail(const std::shared_ptr<Connection>& c) noexcept {
    if (c->fd < 0 || c->state == Connection::State::kBusy) return;
    if (c->state == Connection::State::kIdle || c->state == Connection::State::kReading) {
      try {
        return refuse(c, 500, "the server could not go on with this request (out of memory?)");
      } catch (...) {
      }
    }
    close_conn(c);
  }

  template <class Step>
  void guarded(const std::shared_ptr<Connection>& c, Step&& step) noexcept {
    try {
      step();
    } catch (...) {
      fail(c);
    }
  }

  // Parses what arrived; hands a complete request to the workers.
  void process_input(const std::shared_ptr<Connection>& c) {
    if (c->fd < 0 || (c->state != Connection::State::kIdle && c->state != Connection::State::kReading)) return;
    const RequestParser::State s = c->parser.parse(c->in);
    if (s == RequestParser::State::kError) return refuse(c, c->parser.error().status, c->parser.error().message);
    const std::size_t need = c->parser.body_bytes();
    if (need > c->reserved) {
      if (body_held + (need - c->reserved) > body_budget) {
        return refuse(c, 503, "the server holds as many request bodies as it may now (" + std::to_string(body_budget >> 20) +
                                  " MiB): try again");
      }
      body_held += need - c->reserved;
      c->reserved = need;
    }
    if (s == RequestParser::State::kNeedMore) {
      if (c->parser.started() && c->state == Connection::State::kIdle) {
        c->state = Connection::State::kReading;
        c->since = Clock::now();
        c->deadline = c->since + options.request_timeout;
      }
      if (c->parser.reading_body() && c->parser.request().expect_continue && !c->continue_sent) {
        // A part of it would leave the rest to come in the middle of the answer: the connection
        // ends. None sent (the socket is full): tried again when more bytes arrive.
        const long n = send_some(c->fd, kContinue);
        if (n < 0 || (n > 0 && static_cast<std::size_t>(n) < kContinue.size())) return close_conn(c);
        c->continue_sent = n > 0;
      }
      return;
    }
    {
      std::lock_guard lock(work_mutex);
      HttpRequest request = c->parser.take();
      request.received = Clock::now();
      work.push_back({c, std::move(request)});
    }
    c->continue_sent = false;
    c->state = Connection::State::kBusy;
    unwatch(*c);
    ++busy;
    work_cv.notify_one();
  }

  void read_from(const std::shared_ptr<Connection>& c) {
    const ssize_t n = ::recv(c->fd, read_buf.data(), read_buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return close_conn(c);  // the client left (an unfinished request goes with it)
    if (c->state == Connection::State::kLingering) {
      c->lingered += static_cast<std::size_t>(n);
      if (c->lingered > kLingerBytes) close_conn(c);
      return;
    }
    c->in.append(read_buf.data(), static_cast<std::size_t>(n));
    process_input(c);
  }

  // Connections counted against the cap.
  int counted() const { return static_cast<int>(conns.size()) - over_cap; }

  // At the cap, the oldest connection of the first kind found makes room: idle; an unfinished
  // request (it gets 503); lingering after its answer; a response being written (its client
  // takes it too slowly). Never one a worker has.
  bool make_room() {
    std::shared_ptr<Connection> oldest;
    for (const auto state : {Connection::State::kIdle, Connection::State::kReading, Connection::State::kLingering,
                             Connection::State::kWriting}) {
      for (const auto& [fd, c] : conns) {
        if (!c->over_cap && c->state == state && (!oldest || c->since < oldest->since)) oldest = c;
      }
      if (oldest) break;
    }
    if (!oldest) return false;
    if (oldest->state == Connection::State::kReading) {
      turn_away(oldest, cap_message(" and closed the slowest"));
    } else {
      close_conn(oldest);
    }
    return true;
  }

  // A new connection: waits for its request, or is turned away when every connection in the
  // cap has a request in a worker.
  void admit(int fd) {
    const bool room = counted() < max_connections || make_room();
    auto c = std::make_shared<Connection>(fd, options.limits);
    conns[fd] = c;
    become_idle(*c, options.request_timeout);
    if (!room) turn_away(c, cap_message(", all busy: try again"));
  }

  void accept_all() {
    for (int i = 0; i < 256; ++i) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          set_accepting(false);  // out of descriptors: the backlog holds clients meanwhile
          accept_again = Clock::now() + kAcceptPause;
        }
        return;
      }
      const int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      try {
        admit(fd);
      } catch (...) {
        if (const auto it = conns.find(fd); it != conns.end()) {
          fail(std::shared_ptr<Connection>(it->second));
        } else {
          ::close(fd);
        }
      }
    }
  }

  void on_event(const std::shared_ptr<Connection>& c, std::uint32_t events) {
    switch (c->state) {
      case Connection::State::kIdle:
      case Connection::State::kReading:
      case Connection::State::kLingering: return read_from(c);
      case Connection::State::kWriting:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) flush(c);
        return;
      case Connection::State::kBusy: return;
    }
  }

  void take_returned() {
    std::vector<Returned> returned;
    {
      std::lock_guard lock(back_mutex);
      returned.swap(back);
    }
    for (Returned& r : returned) {
      --busy;
      const std::shared_ptr<Connection>& c = r.conn;
      release_budget(*c);
      if (stopping && Clock::now() >= grace_end) {
        close_conn(c);
        continue;
      }
      c->out = std::move(r.out);
      c->out_at = 0;
      c->close_after = r.close;
      c->state = Connection::State::kWriting;  // the loop's again
      guarded(c, [&] { start_writing(c); });
    }
  }

  void sweep() {
    const auto now = Clock::now();
    if (!accepting && !stopping && now >= accept_again) set_accepting(true);
    std::vector<std::shared_ptr<Connection>> due;
    for (const auto& [fd, c] : conns) {
      if (c->state != Connection::State::kBusy && now >= c->deadline) due.push_back(c);
    }
    for (const auto& c : due) {
      if (c->fd < 0) continue;
      if (c->state == Connection::State::kReading) {
        guarded(c, [&] {
          refuse(c, 408, "the request did not arrive whole within " + seconds_text(options.request_timeout) +
                             " s (plexus serve --request-timeout)");
        });
      } else {
        close_conn(c);  // idle past keep-alive, a response not taken in time, lingering done
      }
    }
  }

  // Stopping, first: no new connections; those waiting for or reading a request close now. The
  // answers under way (in a worker or being written) go on until the grace ends.
  void stop_taking_requests() {
    set_accepting(false);
    ::close(listen_fd);
    listen_fd = -1;
    std::vector<std::shared_ptr<Connection>> idle;
    for (const auto& [fd, c] : conns) {
      if (c->state != Connection::State::kBusy && c->state != Connection::State::kWriting) idle.push_back(c);
    }
    for (const auto& c : idle) close_conn(c);
  }

  // Whether every answer under way is written.
  bool answers_written() const {
    if (busy > 0) return false;
    for (const auto& [fd, c] : conns) {
      if (c->state == Connection::State::kWriting) return false;
    }
    return true;
  }

  // Stopping, last: the listener and every connection not in a worker close now; those in a
  // worker are shut down (their writes fail) and close when the worker gives them back.
  void shut_everything() {
    set_accepting(false);
    if (listen_fd >= 0) ::close(listen_fd);
    listen_fd = -1;
    std::vector<std::shared_ptr<Connection>> all;
    for (const auto& [fd, c] : conns) all.push_back(c);
    for (const auto& c : all) {
      if (c->state == Connection::State::kBusy) {
        ::shutdown(c->fd, SHUT_RDWR);
      } else {
        close_conn(c);
      }
    }
  }

  // One turn: the events, the workers' answers, the stop's steps, the deadlines. Whether the
  // loop is done.
  bool turn(std::vector<epoll_event>& events, Clock::time_point& next_sweep, bool& finishing, bool& shut) {
    const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), static_cast<int>(kSweepEvery.count()));
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd) {
        std::uint64_t count;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd, &count, sizeof count);
      } else if (fd == listen_fd) {
        if (!stopping) accept_all();
      } else if (auto it = conns.find(fd); it != conns.end()) {
        const std::shared_ptr<Connection> c = it->second;
        guarded(c, [&] { on_event(c, events[i].events); });
      }
    }
    take_returned();
    if (stopping && !finishing) {
      stop_taking_requests();
      finishing = true;
    }
    if (finishing && !shut && (answers_written() || Clock::now() >= grace_end)) {
      shut_everything();
      shut = true;
    }
    if (shut && busy == 0) return true;
    if (Clock::now() >= next_sweep) {
      sweep();
      next_sweep = Clock::now() + kSweepEvery;
    }
    return false;
  }

  // The loop's thread. A failure on one connection ends that connection (guarded); one beyond
  // (out of memory between connections) ends the turn, and the next turn goes on.
  void loop() {
    std::vector<epoll_event> events(256);
    auto next_sweep = Clock::now() + kSweepEvery;
    bool finishing = false, shut = false;
    for (;;) {
      try {
        if (turn(events, next_sweep, finishing, shut)) return;
      } catch (...) {
      }
    }
  }

  // A worker's answer to one request: the handler's, or 503 once the server stops (a request
  // still waiting for a worker then), or 500 when the handler fails or gives none. Never throws:
  // when even that answer cannot be made, the connection closes without one.
  Returned answer(Work& w) noexcept {
    Returned r{w.conn, "", true};
    try {
      const std::string path = w.request.path;
      SocketExchange ex(w.conn->fd, std::move(w.request), options.write_timeout);
      if (stopping) {
        HttpResponse page = error_page(503, "the server is stopping: try again", path);
        page.close = true;
        ex.respond(std::move(page));
      }
      try {
        if (!ex.answered()) handler(ex);
      } catch (const std::exception& e) {
        if (!ex.answered()) ex.respond(error_page(500, e.what(), path));
      } catch (...) {
        if (!ex.answered()) ex.respond(error_page(500, "internal server error", path));
      }
      if (!ex.answered()) ex.respond(error_page(500, "the server gave no answer", path));
      r.out = ex.finish();
      r.close = ex.close_after();
    } catch (...) {
      r.out.clear();
      r.close = true;
    }
    return r;
  }

  void worker() {
    for (;;) {
      Work w;
      {
        std::unique_lock lock(work_mutex);
        work_cv.wait(lock, [&] { return !work.empty() || work_closed; });
        if (work.empty()) return;
        w = std::move(work.front());
        work.pop_front();
      }
      const bool large = w.request.body.size() >= kLargeBody;
      Returned r = answer(w);
      // What parsing a large body took is free now: give it back to the system, or the heap
      // keeps the peak of every burst.
      if (large) ::malloc_trim(0);
      {
        std::lock_guard lock(back_mutex);
        back.push_back(std::move(r));
      }
      wake();
    }
  }
};

HttpListener::HttpListener(HttpListenerOptions options, HttpHandler handler, HttpErrorPage error_page)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->handler = std::move(handler);
  impl_->error_page = std::move(error_page);
  impl_->options.workers = std::max(impl_->options.workers, 1);
  impl_->max_connections = std::max(impl_->options.max_connections, 1);
  const std::size_t max_body = impl_->options.limits.max_body;
  const std::size_t four_bodies = max_body > SIZE_MAX / 4 ? SIZE_MAX : 4 * max_body;
  impl_->body_budget = std::max(kMinBodyBudget, four_bodies);
  impl_->response_time = std::max(impl_->options.request_timeout, impl_->options.write_timeout);
}

HttpListener::~HttpListener() { stop(); }

int HttpListener::bind() {
  Impl& m = *impl_;
  // Room for the connection cap in the open-file limit: raised where the hard limit allows,
  // else the cap comes down to fit.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const rlim_t want = static_cast<rlim_t>(m.max_connections) + kFdReserve;
    if (files.rlim_cur < want) {
      files.rlim_cur = std::min(want, files.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &files);
      ::getrlimit(RLIMIT_NOFILE, &files);
    }
    if (files.rlim_cur < want) m.max_connections = std::max(1, static_cast<int>(files.rlim_cur) - kFdReserve);
  }
  const int backlog = std::min(65535, std::max({SOMAXCONN, m.options.workers, m.max_connections}));
  const ListeningSocket s = listen_on(m.options.host, m.options.port, backlog);
  m.listen_fd = s.fd;
  return s.fd < 0 ? -1 : s.port;
}

void HttpListener::start() {
  Impl& m = *impl_;
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = m.wake_fd;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  m.set_accepting(true);
  for (int i = 0; i < m.options.workers; ++i) m.workers.emplace_back([&m] { m.worker(); });
  m.loop_thread = std::thread([&m] { m.loop(); });
}

void HttpListener::stop(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  m.grace_end = Clock::now() + grace;
  m.stopping = true;
  if (m.loop_thread.joinable()) {
    m.wake();
    m.loop_thread.join();
  }
  {
    std::lock_guard lock(m.work_mutex);
    m.work_closed = true;
  }
  m.work_cv.notify_all();
  for (std::thread& t : m.workers) t.join();
  m.workers.clear();
  for (auto& [fd, c] : m.conns) ::close(fd);
  m.conns.clear();
  for (int* fd : {&m.listen_fd, &m.epoll_fd, &m.wake_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

int HttpListener::max_connections() const { return impl_->max_connections; }

}  // namespace plexus
