// Tests of tools/monitor/http_server.h: parsing, status codes, bounds, and a
// slow client or many concurrent scrapes against a store being updated.
#include "tools/monitor/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/monitor/exposition.h"

namespace gpscope::monitor {
namespace {

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads until the server closes (5 s at most).
std::string Exchange(uint16_t port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[8192];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 5000) > 0) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return reply;
}

std::string Get(uint16_t port, const std::string& path, const std::string& extra = "") {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n");
}

int Status(const std::string& reply) {
  if (reply.compare(0, 9, "HTTP/1.1 ") != 0 || reply.size() < 12) return -1;
  return std::stoi(reply.substr(9, 3));
}

std::string Body(const std::string& reply) {
  const size_t end = reply.find("\r\n\r\n");
  return end == std::string::npos ? "" : reply.substr(end + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(HttpServer::Options{}); }
  void Start(const HttpServer::Options& options) {
    server_ = std::make_unique<HttpServer>(options);
    std::string error;
    ASSERT_TRUE(server_->Listen("127.0.0.1:0", &error)) << error;
    ASSERT_NE(server_->port(), 0);
    server_->Start([this](const HttpRequest& r) {
      if (r.path != "/metrics") return HttpResponse{404, "", "not here\n"};
      const ExpositionFormat f = NegotiateFormat(r.accept);
      return HttpResponse{200,
                          f == ExpositionFormat::kOpenMetrics ? kOpenMetricsContentType
                                                              : kPrometheusTextContentType,
                          store_.Render(f)};
    });
  }
  MetricStore store_;
  std::unique_ptr<HttpServer> server_;
};

TEST(HttpParseTest, ListenAddresses) {
  std::string host, error;
  uint16_t port = 1;
  ASSERT_TRUE(ParseListenAddress("127.0.0.1:9464", &host, &port, &error));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 9464);
  ASSERT_TRUE(ParseListenAddress("[::1]:0", &host, &port, &error));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  EXPECT_FALSE(ParseListenAddress("127.0.0.1", &host, &port, &error));
  EXPECT_NE(error.find("HOST:PORT"), std::string::npos);
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:99999", &host, &port, &error));
  EXPECT_FALSE(ParseListenAddress(":9464", &host, &port, &error));
  EXPECT_FALSE(ParseListenAddress("::1:9464", &host, &port, &error));
  EXPECT_FALSE(ParseListenAddress("[::1]9464", &host, &port, &error));
}

TEST(HttpParseTest, RequestHeads) {
  HttpRequest r;
  EXPECT_EQ(ParseHttpRequest("GET /metrics?x=1 HTTP/1.1\r\nAccept:  text/plain\r\n\r\n", &r), 0);
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(r.accept, "text/plain");
  EXPECT_EQ(ParseHttpRequest("HEAD / HTTP/1.0\r\n\r\n", &r), 0);
  EXPECT_EQ(ParseHttpRequest("POST /metrics HTTP/1.1\r\n\r\n", &r), 405);
  EXPECT_EQ(ParseHttpRequest("GET /metrics HTTP/2.0\r\n\r\n", &r), 505);
  EXPECT_EQ(ParseHttpRequest("GET metrics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(ParseHttpRequest("GET /metrics\r\n\r\n", &r), 400);
  EXPECT_EQ(ParseHttpRequest("get /metrics HTTP/1.1\r\n\r\n", &r), 400);
  EXPECT_EQ(ParseHttpRequest("GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", &r), 400);
  EXPECT_EQ(ParseHttpRequest("\x16\x03\x01 binary", &r), 400);
}

TEST_F(HttpServerTest, ServesMetricsAnd404ElsewhereAndHeadWithoutBody) {
  FamilySpec f{"gpscope_test_value", "A value.", MetricType::kGauge, 1, false};
  store_.Stage(store_.AddSeries(f, {{"gpu", "0"}}), 7);
  store_.Commit();
  const std::string ok = Get(server_->port(), "/metrics");
  EXPECT_EQ(Status(ok), 200);
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(Body(ok),
            "# HELP gpscope_test_value A value.\n# TYPE gpscope_test_value gauge\n"
            "gpscope_test_value{gpu=\"0\"} 7\n");
  EXPECT_NE(ok.find("Content-Length: " + std::to_string(Body(ok).size())), std::string::npos);

  const std::string om = Get(server_->port(), "/metrics", "Accept: application/openmetrics-text\r\n");
  EXPECT_NE(om.find("Content-Type: application/openmetrics-text"), std::string::npos);
  EXPECT_NE(Body(om).find("# EOF\n"), std::string::npos);

  EXPECT_EQ(Status(Get(server_->port(), "/")), 404);
  EXPECT_EQ(Status(Get(server_->port(), "/metricsx")), 404);

  const std::string head = Exchange(server_->port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Status(head), 200);
  EXPECT_EQ(Body(head), "");
}

TEST_F(HttpServerTest, BadRequestsGetOneErrorEach) {
  EXPECT_EQ(Status(Exchange(server_->port(), "POST /metrics HTTP/1.1\r\n\r\n")), 405);
  EXPECT_EQ(Status(Exchange(server_->port(), "garbage\r\n\r\n")), 400);
  EXPECT_EQ(Status(Exchange(server_->port(), "GET /metrics HTTP/3\r\n\r\n")), 505);
  // A head larger than the bound (8 KiB) is refused without waiting for its end.
  const std::string huge = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(20000, 'a');
  EXPECT_EQ(Status(Exchange(server_->port(), huge)), 431);
  EXPECT_GE(server_->rejected(), 4u);
  // Still serving.
  EXPECT_EQ(Status(Get(server_->port(), "/metrics")), 200);
}

TEST_F(HttpServerTest, IncompleteRequestTimesOutWith408) {
  HttpServer::Options o;
  o.request_timeout_ms = 200;
  server_->Stop();
  Start(o);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string reply = Exchange(server_->port(), "GET /metrics HTTP/1.1\r\n");  // no blank line
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(Status(reply), 408);
  EXPECT_LT(s, 3.0);
}

TEST_F(HttpServerTest, StalledClientDoesNotBlockOthers) {
  // One client sends half a request and stalls; another holds a response
  // without reading it. Scrapes from others still succeed at once.
  const int stalled = Connect(server_->port());
  ASSERT_GE(stalled, 0);
  ASSERT_GT(send(stalled, "GET /met", 8, MSG_NOSIGNAL), 0);
  const int not_reading = Connect(server_->port());
  ASSERT_GE(not_reading, 0);
  const std::string req = "GET /metrics HTTP/1.1\r\n\r\n";
  ASSERT_GT(send(not_reading, req.data(), req.size(), MSG_NOSIGNAL), 0);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(Status(Get(server_->port(), "/metrics")), 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  }
  close(stalled);
  close(not_reading);
}

TEST_F(HttpServerTest, ConnectionsBeyondTheLimitGet503) {
  HttpServer::Options o;
  o.max_connections = 2;
  server_->Stop();
  Start(o);
  const int a = Connect(server_->port());
  const int b = Connect(server_->port());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both accepted
  EXPECT_EQ(Status(Get(server_->port(), "/metrics")), 503);
  close(a);
  close(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Status(Get(server_->port(), "/metrics")), 200);
}

TEST_F(HttpServerTest, ConcurrentScrapesWhileTheStoreIsUpdated) {
  // The sampling side: new series and values every round, as the monitor does.
  FamilySpec f{"gpscope_test_round", "Round.", MetricType::kGauge, 1, false};
  std::vector<uint32_t> handles;
  for (int i = 0; i < 50; ++i) handles.push_back(store_.AddSeries(f, {{"i", std::to_string(i)}}));
  for (uint32_t h : handles) store_.Stage(h, 0);
  store_.Commit();  // the first round is in before any client asks
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    for (int round = 1; !done.load(); ++round) {
      if (round % 10 == 0) {
        store_.RemoveSeries(handles.back());
        handles.pop_back();
        handles.push_back(store_.AddSeries(f, {{"i", "r" + std::to_string(round)}}));
      }
      for (uint32_t h : handles) store_.Stage(h, round);
      store_.Commit();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        const std::string reply = Get(server_->port(), "/metrics");
        const std::string body = Body(reply);
        // Every page is whole and from one round: HELP, TYPE, then 50 series
        // with the same value (49 while a just-added series has no value yet).
        std::istringstream lines(body);
        std::string line, value;
        size_t n = 0;
        bool same_round = true;
        while (std::getline(lines, line)) {
          if (++n <= 2) continue;
          const std::string v = line.substr(line.rfind(' ') + 1);
          if (!value.empty() && v != value) same_round = false;
          value = v;
        }
        if (Status(reply) == 200 && (n == 52 || n == 51) && same_round &&
            body.rfind("# HELP gpscope_test_round ", 0) == 0) {
          ok.fetch_add(1);
        } else {
          ADD_FAILURE() << "status " << Status(reply) << ", " << n << " lines, same round "
                        << same_round;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  done.store(true);
  sampler.join();
  EXPECT_EQ(ok.load(), 160);
  EXPECT_GE(server_->requests(), 160u);
}

TEST(HttpServerListenTest, AddressInUseIsOneClearError) {
  HttpServer a;
  std::string error;
  ASSERT_TRUE(a.Listen("127.0.0.1:0", &error)) << error;
  HttpServer b;
  const std::string addr = "127.0.0.1:" + std::to_string(a.port());
  EXPECT_FALSE(b.Listen(addr, &error));
  EXPECT_EQ(error, addr + ": Address already in use");
}

}  // namespace
}  // namespace gpscope::monitor
