// kube-apiserver's request and storage metrics.
#include "apiserver/request_metrics.h"

#include "apiserver/api.h"

namespace kvol::apiserver {
namespace {

prometheus::Family<prometheus::Counter>& Requests() {
  static auto& f = prometheus::BuildCounter()
                       .Name("apiserver_request_total")
                       .Help(
                           "Counter of apiserver requests broken out for each verb, dry run "
                           "value, group, version, resource, scope, component, and HTTP "
                           "response code.")
                       .Register(metrics::Registry());
  return f;
}

prometheus::Family<prometheus::Histogram>& Durations() {
  static auto& f = prometheus::BuildHistogram()
                       .Name("apiserver_request_duration_seconds")
                       .Help(
                           "Response latency distribution in seconds for each verb, dry run "
                           "value, group, version, resource, subresource, scope and component.")
                       .Register(metrics::Registry());
  return f;
}

// kube-apiserver's buckets.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries b = {
      0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2,
      3,     4,     5,    6,   8,   10,  15,  20,  30,  45,   60};
  return b;
}

}  // namespace

void ObserveRequest(const RequestInfo& info, int code, std::chrono::duration<double> took) {
  std::map<std::string, std::string> labels = {
      {"verb", info.verb},         {"dry_run", info.dry_run ? "All" : ""},
      {"group", info.group},       {"version", info.version},
      {"resource", info.resource}, {"subresource", info.subresource},
      {"scope", info.scope},       {"component", "apiserver"},
  };
  if (info.verb != "WATCH" && info.verb != "CONNECT") {
    Durations().Add(labels, DurationBuckets()).Observe(took.count());
  }
  labels["code"] = std::to_string(code);
  Requests().Add(labels).Increment();
}

std::vector<prometheus::MetricFamily> StorageObjectFamilies(Api& api) {
  prometheus::MetricFamily f{"apiserver_storage_objects",
                             "Number of stored objects at the time of last check split by kind.",
                             prometheus::MetricType::Gauge,
                             {}};
  api.ForEachResource([&](Resource& r) {
    prometheus::ClientMetric m;
    const auto& k = r.info();
    std::string name(k.resource);
    if (!k.group.empty()) name += "." + std::string(k.group);
    m.label = {{"resource", std::move(name)}};
    m.gauge.value = static_cast<double>(r.StoredCount());
    f.metric.push_back(std::move(m));
  });
  return {f};
}

}  // namespace kvol::apiserver
