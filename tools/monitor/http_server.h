// tools/monitor/http_server.h: a tiny HTTP/1.1 server for the node monitor's
// /metrics page. Plain sockets, one thread, poll(); no dependency.
//
//   HttpServer server;
//   std::string error;
//   if (!server.Listen("127.0.0.1:9464", &error)) { ...one line, exit... }
//   server.Start([&](const HttpRequest& r) { return HttpResponse{200, "text/plain", "ok\n"}; });
//   ... server.port() ...
//   server.Stop();
//
// Each connection carries one request, answered with "Connection: close".
// Bounded: a request head larger than max_request_bytes gets 431, one that
// is not complete within request_timeout_ms gets 408, a response a client
// does not take within response_timeout_ms is dropped, and connections
// beyond max_connections get 503. Requests that cannot be parsed get 400,
// methods other than GET/HEAD 405. All sockets are non-blocking, so a slow
// or stalled client delays nobody but itself: not other clients and not the
// monitor's sampling thread (which shares only the handler's data with this
// thread; see MetricStore).
//
// Thread model: Listen/Start/Stop on one controlling thread. The handler
// runs on the server thread, one request at a time. The server thread is
// started with every signal blocked, so SIGTERM/SIGINT/SIGPIPE go to the
// controlling thread (sends use MSG_NOSIGNAL).
#ifndef GPSCOPE_TOOLS_MONITOR_HTTP_SERVER_H_
#define GPSCOPE_TOOLS_MONITOR_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace gpscope::monitor {

struct HttpRequest {
  std::string method;  // "GET"
  std::string path;    // "/metrics" (query string removed)
  std::string accept;  // the Accept header, "" if none
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
};

// Splits "127.0.0.1:9464", "[::1]:9464", "localhost:9464" into host and
// port. False with *error for anything else (port 0 is allowed: any free port).
bool ParseListenAddress(const std::string& address, std::string* host, uint16_t* port,
                        std::string* error);

// Parses a request head (everything up to and including the blank line).
// Returns 0 on success, else the HTTP status to answer with (400, 405, 505).
int ParseHttpRequest(const std::string& head, HttpRequest* out);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  struct Options {
    size_t max_request_bytes = 8192;
    size_t max_connections = 32;
    uint32_t request_timeout_ms = 5000;
    uint32_t response_timeout_ms = 10000;
  };

  HttpServer();
  explicit HttpServer(const Options& options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens. False with a one-line *error ("127.0.0.1:9464: Address
  // already in use").
  bool Listen(const std::string& address, std::string* error);
  // The bound port (the real one when Listen asked for port 0).
  uint16_t port() const { return port_; }
  bool Start(Handler handler);
  void Stop();

  // Any thread.
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  struct Connection;
  void Loop();

  Options options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the loop
  uint16_t port_ = 0;
  Handler handler_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0};  // answered, any status
  std::atomic<uint64_t> rejected_{0};  // 4xx/5xx answers and dropped connections
};

}  // namespace gpscope::monitor

#endif  // GPSCOPE_TOOLS_MONITOR_HTTP_SERVER_H_
