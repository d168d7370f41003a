// The API server's own metrics, with kube-apiserver's names and labels:
//   apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}
//   apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,
//       component} (not for WATCH and CONNECT, which last as long as their client wants)
//   apiserver_storage_objects{resource}: the objects stored, per resource ("pods",
//       "storageclasses.storage.k8s.io"), read when scraped.
// Requests are counted once authenticated, as Kubernetes counts them.
#pragma once

#include <chrono>
#include <memory>

#include "apiserver/http_server.h"
#include "apiserver/request_info.h"
#include "metrics/metrics.h"

namespace kvol::apiserver {

class Api;

void ObserveRequest(const RequestInfo& info, int code, std::chrono::duration<double> took);

// A ResponseWriter that passes everything on and remembers the status it answered.
class StatusRecorder final : public ResponseWriter {
 public:
  explicit StatusRecorder(ResponseWriter& w) : w_(w) {}
  int status() const { return status_; }

  bool Send(int status, std::string_view content_type, std::string_view body,
            const std::vector<std::pair<std::string, std::string>>& headers) override {
    status_ = status;
    return w_.Send(status, content_type, body, headers);
  }
  bool StartStream(int status, std::string_view content_type) override {
    status_ = status;
    return w_.StartStream(status, content_type);
  }
  bool WriteChunk(std::string_view data) override { return w_.WriteChunk(data); }
  void EndStream() override { w_.EndStream(); }
  std::unique_ptr<UpgradedConnection> Upgrade(
      const std::vector<std::pair<std::string, std::string>>& headers) override {
    status_ = 101;
    return w_.Upgrade(headers);
  }
  bool Stopping() const override { return w_.Stopping(); }
  bool Detach(std::shared_ptr<StreamSource> source) override {
    return w_.Detach(std::move(source));
  }
  void Authenticated() override { w_.Authenticated(); }

 private:
  ResponseWriter& w_;
  int status_ = 0;
};

// apiserver_storage_objects for `api`, from its watch caches.
std::vector<prometheus::MetricFamily> StorageObjectFamilies(Api& api);

}  // namespace kvol::apiserver
