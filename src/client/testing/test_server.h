// For tests: a real API server in the test process (SQLite store in a temporary directory,
// HTTPS on a free loopback port) with a client of each transport.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "apiserver/api.h"
#include "apiserver/http_server.h"
#include "apiserver/rest.h"
#include "client/client.h"
#include "client/http.h"
#include "os/clock.h"
#include "store/store.h"

namespace kvol::client::testing {

struct TestServerOptions {
  bool http = true;  // also serve HTTPS and make an HttpClient
  std::string etcd;  // "host:port" of an empty etcd to use instead of SQLite
  bool fsync = true;  // SQLite: acknowledge writes after fsync
  os::Clock* clock = &os::RealClock();
  std::chrono::seconds bookmark_interval{60};
  // Sees every HTTPS request first; true when it has answered it (to stand in for a server
  // that behaves otherwise), false to pass it on to the API.
  std::function<bool(const apiserver::HttpRequest&, apiserver::ResponseWriter&)> intercept;
};

class TestServer {
 public:
  static StatusOr<std::unique_ptr<TestServer>> Start(TestServerOptions opts = {});
  ~TestServer();  // stops everything and removes the directory

  // Stops the API (and HTTPS) and starts it again on the same store, as a server restart does:
  // watch caches start empty, so old resourceVersions are served from the store's history or
  // answered 410. Clients obtained before are replaced.
  Status Restart();

  apiserver::Api& api() { return *api_; }
  store::Store& store() { return *store_; }
  Client& local() { return *local_; }
  Client& http() { return *http_; }  // requires opts.http
  const HttpConfig& http_config() const { return http_config_; }
  const std::string& dir() const { return dir_; }

 private:
  explicit TestServer(TestServerOptions opts) : opts_(opts) {}
  Status StartApi();
  void StopApi();

  TestServerOptions opts_;
  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<apiserver::Api> api_;
  std::unique_ptr<apiserver::RestHandler> rest_;
  std::unique_ptr<apiserver::HttpServer> server_;
  std::unique_ptr<Client> local_;
  std::unique_ptr<Client> http_;
  HttpConfig http_config_;
};

}  // namespace kvol::client::testing
