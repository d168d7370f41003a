// The in-process test server.
#include "client/testing/test_server.h"

#include <filesystem>

#include "apiserver/jwt.h"
#include "apiserver/service_account_token.h"
#include "apiserver/tls.h"
#include "client/local/local_client.h"
#include "client/testing/kvol_process.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace kvol::client::testing {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<TestServer>> TestServer::Start(TestServerOptions opts) {
  std::unique_ptr<TestServer> t(new TestServer(opts));
  auto dir = MakeTempDir("kvol-client");
  if (!dir.ok()) return dir.status();
  t->dir_ = *std::move(dir);
  if (!opts.etcd.empty()) {
    auto s = store::OpenEtcdStore({{opts.etcd}});
    if (!s.ok()) return s.status();
    t->store_ = std::move(*s);
  } else {
    store::SqliteOptions so;
    so.path = t->dir_ + "/kvol.db";
    so.fsync = opts.fsync;
    auto s = store::OpenSqliteStore(so);
    if (!s.ok()) return s.status();
    t->store_ = std::move(*s);
  }
  if (Status st = t->StartApi(); !st.ok()) return st;
  return t;
}

Status TestServer::StartApi() {
  api_ = std::make_unique<apiserver::Api>(*store_, *opts_.clock);
  if (Status st = api_->Start(); !st.ok()) return st;
  // What `kvol server` and its controllers have made before a pod is created: service account
  // tokens, signed with a key kept in the directory, and the "default" ServiceAccount of the
  // "default" namespace, which pods run as.
  auto key = apiserver::EnsureSigningKey(dir_ + "/sa.key");
  if (!key.ok()) return key.status();
  auto signer = apiserver::JwtSigner::FromPem(*key);
  if (!signer.ok()) return signer.status();
  api_->SetServiceAccountTokens(std::make_unique<apiserver::ServiceAccountTokens>(
      *api_, *std::move(signer), apiserver::ServiceAccountTokenOptions{}));
  api::ServiceAccount account;
  account.metadata.name = "default";
  auto made = api_->registry<api::ServiceAccount>().Create(account, "default");
  if (!made.ok() && !api::IsAlreadyExists(made.error())) {
    return UnavailableError("the default ServiceAccount: " + made.error().message);
  }
  local_ = std::make_unique<LocalClient>(*api_);
  if (!opts_.http) return OkStatus();

  auto tls = apiserver::EnsureTls(dir_, {"127.0.0.1"});
  if (!tls.ok()) return tls.status();
  auto token = apiserver::EnsureAdminToken(dir_);
  if (!token.ok()) return token.status();
  apiserver::RestOptions ro;
  ro.token = *token;
  ro.bookmark_interval = opts_.bookmark_interval;
  rest_ = std::make_unique<apiserver::RestHandler>(*api_, ro);
  apiserver::HttpServerOptions ho;
  ho.port = 0;
  ho.cert_pem = tls->server_cert_pem;
  ho.key_pem = tls->server_key_pem;
  auto* rest = rest_.get();
  server_ = std::make_unique<apiserver::HttpServer>(
      ho, [rest, intercept = opts_.intercept](const apiserver::HttpRequest& req,
                                              apiserver::ResponseWriter& w) {
        if (intercept && intercept(req, w)) return;
        rest->Handle(req, w);
      });
  if (Status st = server_->Start(); !st.ok()) return st;
  const std::string url = "https://127.0.0.1:" + std::to_string(server_->port());
  if (Status st = apiserver::WriteKubeconfig(dir_, url, tls->ca_cert_pem, *token); !st.ok()) {
    return st;
  }
  auto cfg = LoadKubeconfig(dir_ + "/kubeconfig");
  if (!cfg.ok()) return cfg.status();
  http_config_ = *cfg;
  auto c = HttpClient::Create(*cfg);
  if (!c.ok()) return c.status();
  http_ = std::move(*c);
  return OkStatus();
}

void TestServer::StopApi() {
  http_.reset();
  if (rest_) rest_->Shutdown();
  if (server_) server_->Stop();
  server_.reset();
  rest_.reset();
  local_.reset();
  if (api_) api_->Stop();
  api_.reset();
}

Status TestServer::Restart() {
  StopApi();
  return StartApi();
}

TestServer::~TestServer() {
  StopApi();
  store_.reset();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace kvol::client::testing
