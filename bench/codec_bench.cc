// The cost of the object model on the paths every API request takes: parse JSON text, decode it
// into a typed PersistentVolume, default and validate it, encode it and write JSON text again.
// Prints Google Benchmark's table; bench/RESULTS.md records the figures and the command.
#include <benchmark/benchmark.h>

#include "api/codec.h"
#include "api/core.h"
#include "api/defaults.h"
#include "api/quantity.h"
#include "api/validation.h"

namespace {

using kvol::api::Json;

const char* kPV = R"({"apiVersion": "v1", "kind": "PersistentVolume",
  "metadata": {"name": "pv-000123", "labels": {"app": "nfs", "tier": "gold"},
               "finalizers": ["kubernetes.io/pv-protection"],
               "annotations": {"pv.kubernetes.io/provisioned-by": "kvol.io/local-path"}},
  "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
           "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "local-path",
           "volumeMode": "Filesystem", "local": {"path": "/var/lib/kvol/volumes/pv-000123"},
           "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
             {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}},
  "status": {"phase": "Available"}})";

void BM_ParseJson(benchmark::State& state) {
  std::string text = Json::parse(kPV).dump();
  for (auto _ : state) benchmark::DoNotOptimize(Json::parse(text));
  state.SetBytesProcessed(state.iterations() * text.size());
}
BENCHMARK(BM_ParseJson);

void BM_DecodePersistentVolume(benchmark::State& state) {
  Json j = Json::parse(kPV);
  for (auto _ : state) {
    kvol::api::FieldErrors errs;
    benchmark::DoNotOptimize(kvol::api::DecodeStruct<kvol::api::PersistentVolume>(j, &errs));
  }
}
BENCHMARK(BM_DecodePersistentVolume);

// JSON text straight to the struct: what the two benchmarks above do together.
void BM_DecodeTextPersistentVolume(benchmark::State& state) {
  for (auto _ : state) {
    kvol::api::PersistentVolume pv;
    if (!kvol::api::DecodeJsonText(kPV, pv)) state.SkipWithError("declined");
    benchmark::DoNotOptimize(pv);
  }
}
BENCHMARK(BM_DecodeTextPersistentVolume);

void BM_DefaultAndValidatePersistentVolume(benchmark::State& state) {
  kvol::api::FieldErrors errs;
  auto pv = kvol::api::DecodeStruct<kvol::api::PersistentVolume>(Json::parse(kPV), &errs);
  for (auto _ : state) {
    auto copy = pv;
    kvol::api::SetDefaults(copy);
    benchmark::DoNotOptimize(kvol::api::Validate(copy));
  }
}
BENCHMARK(BM_DefaultAndValidatePersistentVolume);

void BM_EncodePersistentVolume(benchmark::State& state) {
  kvol::api::FieldErrors errs;
  auto pv = kvol::api::DecodeStruct<kvol::api::PersistentVolume>(Json::parse(kPV), &errs);
  for (auto _ : state) benchmark::DoNotOptimize(kvol::api::EncodeStruct(pv).dump());
}
BENCHMARK(BM_EncodePersistentVolume);

void BM_QuantityParse(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kvol::api::Quantity::Parse("1536Mi"));
}
BENCHMARK(BM_QuantityParse);

void BM_QuantityToString(benchmark::State& state) {
  auto q = kvol::api::Quantity::MustParse("1.5Gi");
  for (auto _ : state) benchmark::DoNotOptimize(q.ToString());
}
BENCHMARK(BM_QuantityToString);

}  // namespace

BENCHMARK_MAIN();
