// tools/monitor/http_server.cc: see http_server.h.
#include "tools/monitor/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/posix.h"

namespace gpscope::monitor {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : "Error";
  }
}

std::string Serialize(const HttpResponse& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
  out += "Content-Type: " + (r.content_type.empty() ? std::string("text/plain; charset=utf-8")
                                                     : r.content_type) + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (r.status == 405) out += "Allow: GET, HEAD\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

HttpResponse Error(int status) {
  return HttpResponse{status, "text/plain; charset=utf-8",
                      std::to_string(status) + " " + Reason(status) + "\n"};
}

bool EqualsIgnoreCase(const std::string& a, const char* b) {
  return strcasecmp(a.c_str(), b) == 0;
}

}  // namespace

bool ParseListenAddress(const std::string& address, std::string* host, uint16_t* port,
                        std::string* error) {
  std::string h, p;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      *error = "bad listen address '" + address + "': expected [IPv6]:PORT";
      return false;
    }
    h = address.substr(1, close - 1);
    p = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos || address.find(':') != colon) {
      *error = "bad listen address '" + address + "': expected HOST:PORT, e.g. 127.0.0.1:9464";
      return false;
    }
    h = address.substr(0, colon);
    p = address.substr(colon + 1);
  }
  if (h.empty()) {
    *error = "bad listen address '" + address + "': no host (use 0.0.0.0 for every interface)";
    return false;
  }
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(p) > 65535) {
    *error = "bad listen address '" + address + "': port must be 0..65535";
    return false;
  }
  *host = h;
  *port = static_cast<uint16_t>(std::stoul(p));
  return true;
}

int ParseHttpRequest(const std::string& head, HttpRequest* out) {
  const size_t eol = head.find("\r\n");
  if (eol == std::string::npos) return 400;
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || line.find(' ', sp2 + 1) != std::string::npos) {
    return 400;
  }
  out->method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string version = line.substr(sp2 + 1);
  if (out->method.empty() || target.empty() || target[0] != '/') return 400;
  for (char c : out->method) {
    if (c < 'A' || c > 'Z') return 400;
  }
  if (version.compare(0, 5, "HTTP/") != 0) return 400;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return 505;
  out->path = target.substr(0, target.find('?'));
  out->accept.clear();
  // Header lines: "Name: value". Only Accept matters here.
  size_t pos = eol + 2;
  while (pos < head.size()) {
    const size_t end = head.find("\r\n", pos);
    if (end == std::string::npos || end == pos) break;
    const std::string field = head.substr(pos, end - pos);
    const size_t colon = field.find(':');
    if (colon == std::string::npos || colon == 0) return 400;
    std::string name = field.substr(0, colon);
    if (EqualsIgnoreCase(name, "accept")) {
      std::string value = field.substr(colon + 1);
      const size_t first = value.find_first_not_of(" \t");
      out->accept = first == std::string::npos ? "" : value.substr(first);
    }
    pos = end + 2;
  }
  if (out->method != "GET" && out->method != "HEAD") return 405;
  return 0;
}

struct HttpServer::Connection {
  int fd = -1;
  std::string in;
  std::string out;
  size_t sent = 0;
  bool responding = false;
  uint64_t deadline_ms = 0;
};

HttpServer::HttpServer() : HttpServer(Options{}) {}
HttpServer::HttpServer(const Options& options) : options_(options) {}

HttpServer::~HttpServer() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool HttpServer::Listen(const std::string& address, std::string* error) {
  std::string host;
  uint16_t port = 0;
  if (!ParseListenAddress(address, &host, &port, error)) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    *error = address + ": " + gai_strerror(rc);
    return false;
  }
  std::string last = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = strerror(errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      last = strerror(errno);
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    listen_fd_ = fd;
    break;
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    *error = address + ": " + last;
    return false;
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    *error = std::string("eventfd: ") + strerror(errno);
    return false;
  }
  return true;
}

bool HttpServer::Start(Handler handler) {
  if (listen_fd_ < 0 || thread_.joinable()) return false;
  handler_ = std::move(handler);
  stop_.store(false, std::memory_order_relaxed);
  // The thread inherits this mask: every signal blocked, so process-directed
  // SIGTERM/SIGINT reach the controlling thread.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] { Loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
  thread_.join();
}

// Server thread.
void HttpServer::Loop() {
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<pollfd> fds;
  // Out of file descriptors: the listening socket stays readable, so stop
  // polling it for a while instead of spinning on accept().
  uint64_t accept_paused_until_ms = 0;
  auto finish = [&](Connection& c, const HttpResponse& r, bool head_only) {
    c.out = Serialize(r, head_only);
    c.sent = 0;
    c.responding = true;
    c.deadline_ms = common::ClockMs(CLOCK_MONOTONIC) + options_.response_timeout_ms;
    requests_.fetch_add(1, std::memory_order_relaxed);
    if (r.status >= 400) rejected_.fetch_add(1, std::memory_order_relaxed);
  };
  while (!stop_.load(std::memory_order_relaxed)) {
    fds.clear();
    fds.push_back(pollfd{wake_fd_, POLLIN, 0});
    const uint64_t before_poll = common::ClockMs(CLOCK_MONOTONIC);
    const bool accepting = before_poll >= accept_paused_until_ms;
    fds.push_back(pollfd{accepting ? listen_fd_ : -1, POLLIN, 0});
    uint64_t next_deadline = accepting ? UINT64_MAX : accept_paused_until_ms;
    for (const auto& c : conns) {
      fds.push_back(pollfd{c->fd, static_cast<short>(c->responding ? POLLOUT : POLLIN), 0});
      next_deadline = std::min(next_deadline, c->deadline_ms);
    }
    const uint64_t now = before_poll;
    int timeout = -1;
    if (next_deadline != UINT64_MAX) {
      timeout = next_deadline <= now ? 0 : static_cast<int>(std::min<uint64_t>(next_deadline - now, 60000));
    }
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (stop_.load(std::memory_order_relaxed)) break;

    // Existing connections first (fds[2..] match conns[0..] by position).
    const uint64_t t = common::ClockMs(CLOCK_MONOTONIC);
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = *conns[i];
      const short ev = fds[i + 2].revents;
      bool drop = false;
      if (!c.responding && (ev & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        for (;;) {
          const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
          if (n > 0) {
            c.in.append(buf, static_cast<size_t>(n));
            if (c.in.size() > options_.max_request_bytes) break;
            if (c.in.find("\r\n\r\n") != std::string::npos) break;
            continue;
          }
          if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) drop = true;
          break;
        }
        const size_t end = c.in.find("\r\n\r\n");
        if (end != std::string::npos && end + 4 <= options_.max_request_bytes) {
          HttpRequest req;
          const int status = ParseHttpRequest(c.in.substr(0, end + 4), &req);
          if (status != 0) {
            finish(c, Error(status), false);
          } else {
            finish(c, handler_(req), req.method == "HEAD");
          }
          drop = false;  // a client may half-close after its request
        } else if (c.in.size() > options_.max_request_bytes) {
          finish(c, Error(431), false);
          drop = false;
        }
      }
      if (c.responding && !drop) {  // also right after the request: most pages fit the socket buffer
        while (c.sent < c.out.size()) {
          const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
          if (n > 0) {
            c.sent += static_cast<size_t>(n);
            continue;
          }
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
          drop = true;
          break;
        }
        if (c.sent == c.out.size()) drop = true;  // done: close
      }
      if (!drop && t >= c.deadline_ms) {
        if (!c.responding) {
          // A request head that did not arrive in time: answer 408, once.
          finish(c, Error(408), false);
          const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
          (void)n;
        } else {
          rejected_.fetch_add(1, std::memory_order_relaxed);  // client stopped reading
        }
        drop = true;
      }
      if (drop) {
        shutdown(c.fd, SHUT_RDWR);
        close(c.fd);
        c.fd = -1;
      }
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(),
                               [](const std::unique_ptr<Connection>& c) { return c->fd < 0; }),
                conns.end());

    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            accept_paused_until_ms = common::ClockMs(CLOCK_MONOTONIC) + 100;
          }
          break;
        }
        if (conns.size() >= options_.max_connections) {
          const std::string busy = Serialize(Error(503), false);
          const ssize_t n = send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
          (void)n;
          close(fd);
          rejected_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        auto c = std::make_unique<Connection>();
        c->fd = fd;
        c->deadline_ms = common::ClockMs(CLOCK_MONOTONIC) + options_.request_timeout_ms;
        conns.push_back(std::move(c));
      }
    }
  }
  for (auto& c : conns) close(c->fd);
}

}  // namespace gpscope::monitor
