#include "controller/snapshot/snapshot_controller_base.h"

#include "base/thread.h"
#include "client/worker.h"

namespace kvol::controller::snapshot {
namespace {

constexpr std::string_view kSnapshotPrefix = "vs/";
constexpr std::string_view kContentPrefix = "vsc/";

}  // namespace

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Controller::~Controller() { Stop(); }

void Controller::EnqueueSnapshot(const std::string& ns, const std::string& name) {
  queue_->Add(std::string(kSnapshotPrefix) + ns + "/" + name);
}

void Controller::EnqueueSnapshotsOf(const api::PersistentVolumeClaim& pvc) {
  auto restores = [&](const auto& ref) {
    return ref && ref->kind == "VolumeSnapshot" ? ref->name : std::string();
  };
  const std::string restored = restores(pvc.spec.data_source);
  const std::string restored_ref = restores(pvc.spec.data_source_ref);
  for (const auto& vs : snapshots_->List()) {
    if (vs->metadata.namespace_ != pvc.metadata.namespace_) continue;
    if (vs->spec.source.persistent_volume_claim_name == pvc.metadata.name ||
        vs->metadata.name == restored || vs->metadata.name == restored_ref) {
      EnqueueSnapshot(vs->metadata.namespace_, vs->metadata.name);
    }
  }
}

Status Controller::Sync(const std::string& key) {
  std::string_view k = key;
  if (k.starts_with(kContentPrefix)) {
    auto c = contents_->Get("", std::string(k.substr(kContentPrefix.size())));
    return c ? decisions_->SyncContent(*c) : OkStatus();
  }
  auto [ns, name] = client::SplitKey(k.substr(kSnapshotPrefix.size()));
  auto vs = snapshots_->Get(ns, name);
  return vs ? decisions_->SyncSnapshot(*vs) : OkStatus();
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  client::EventSink events = options_.events;
  if (!events) {
    recorder_ = std::make_unique<client::EventRecorder>(
        client_.resource<api::Event>(),
        client::EventRecorderOptions{.component = "snapshot-controller"}, *options_.clock);
    events = client::SinkTo(*recorder_);
  }
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "snapshot-controller"});
  decisions_ = std::make_unique<SnapshotController>(
      client_, std::move(events), *options_.clock,
      [this](const std::string& key) { queue_->Add(std::string(kSnapshotPrefix) + key); });
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});

  auto snapshot_changed = [this](const std::shared_ptr<const api::VolumeSnapshot>& vs) {
    EnqueueSnapshot(vs->metadata.namespace_, vs->metadata.name);
  };
  snapshots_ = &informers_->Handle<api::VolumeSnapshot>({
      .on_add = snapshot_changed,
      .on_update = [snapshot_changed](const auto&, const auto& now) { snapshot_changed(now); },
      .on_delete =
          [this](const std::shared_ptr<const api::VolumeSnapshot>& vs) {
            // Its content may now be let go; other snapshots of its claim may release it.
            if (vs->status && vs->status->bound_volume_snapshot_content_name) {
              queue_->Add(std::string(kContentPrefix) + *vs->status->bound_volume_snapshot_content_name);
            }
          },
  });
  auto content_changed = [this](const std::shared_ptr<const api::VolumeSnapshotContent>& c) {
    queue_->Add(std::string(kContentPrefix) + c->metadata.name);
  };
  contents_ = &informers_->Handle<api::VolumeSnapshotContent>({
      .on_add = content_changed,
      .on_update = [content_changed](const auto&, const auto& now) { content_changed(now); },
      .on_delete =
          [this](const std::shared_ptr<const api::VolumeSnapshotContent>& c) {
            // A snapshot waiting for its content to go can now go itself.
            const auto& ref = c->spec.volume_snapshot_ref;
            if (!ref.name.empty()) EnqueueSnapshot(ref.namespace_, ref.name);
          },
  });
  auto claim_changed = [this](const std::shared_ptr<const api::PersistentVolumeClaim>& pvc) {
    EnqueueSnapshotsOf(*pvc);
  };
  auto& claims = informers_->Handle<api::PersistentVolumeClaim>({
      .on_add = claim_changed,
      .on_update = [claim_changed](const auto&, const auto& now) { claim_changed(now); },
      .on_delete = claim_changed,
  });
  // A class made after its snapshots: they can go on at once.
  auto class_added = [this](const auto&) {
    for (const auto& vs : snapshots_->List()) {
      if (!vs->status || !vs->status->ready_to_use.value_or(false)) {
        EnqueueSnapshot(vs->metadata.namespace_, vs->metadata.name);
      }
    }
  };
  auto& classes = informers_->Handle<api::VolumeSnapshotClass>(
      {.on_add = class_added, .on_update = [class_added](const auto&, const auto& c) { class_added(c); }});
  snapshots_->Start();
  contents_->Start();
  claims.Start();
  classes.Start();
  if (!snapshots_->WaitForSync(sync_timeout) || !contents_->WaitForSync(sync_timeout) ||
      !claims.WaitForSync(sync_timeout) || !classes.WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("snapshot-controller: caches did not fill in time");
  }
  for (const auto& vs : snapshots_->List()) EnqueueSnapshot(vs->metadata.namespace_, vs->metadata.name);
  for (const auto& c : contents_->List()) queue_->Add(std::string(kContentPrefix) + c->metadata.name);
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this] {
      SetThreadName("snapshot-ctrl");
      client::RunWorker(*queue_, [this](const std::string& key) { return Sync(key); },
                        "snapshot-controller");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  if (informers_) informers_->Stop();
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (recorder_) recorder_->Flush(std::chrono::seconds(2));
}

}  // namespace kvol::controller::snapshot
