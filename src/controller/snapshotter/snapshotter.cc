#include "controller/snapshotter/snapshotter.h"

#include "api/api_error.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/snapshot/snapshot_controller.h"
#include "controller/snapshotter/create_snapshot.h"
#include "controller/util/meta.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller::snapshotter {
namespace {

namespace pb = ::csi::v1;
using client::ApiStatus;

class CsiSnapshotCalls final : public SnapshotCalls {
 public:
  explicit CsiSnapshotCalls(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  StatusOr<bool> Supported(const volume::plugins::CsiDriver& driver) override {
    return driver.client->ControllerSupports(
        pb::ControllerServiceCapability::RPC::CREATE_DELETE_SNAPSHOT);
  }

  StatusOr<pb::Snapshot> Create(const volume::plugins::CsiDriver& driver,
                                const pb::CreateSnapshotRequest& req) override {
    KVOL_ASSIGN_OR_RETURN(auto resp,
                          driver.client->Call(&pb::Controller::Stub::CreateSnapshot, req, timeout_));
    return resp.snapshot();
  }

  StatusOr<std::optional<pb::Snapshot>> Get(
      const volume::plugins::CsiDriver& driver, const std::string& id,
      const std::map<std::string, std::string>& secrets) override {
    KVOL_ASSIGN_OR_RETURN(bool can_list, driver.client->ControllerSupports(
                                             pb::ControllerServiceCapability::RPC::LIST_SNAPSHOTS));
    if (!can_list) {
      // As external-snapshotter: a driver that cannot list is taken at its word.
      pb::Snapshot s;
      s.set_snapshot_id(id);
      s.set_ready_to_use(true);
      return std::optional<pb::Snapshot>(s);
    }
    pb::ListSnapshotsRequest req;
    req.set_snapshot_id(id);
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    KVOL_ASSIGN_OR_RETURN(auto resp,
                          driver.client->Call(&pb::Controller::Stub::ListSnapshots, req, timeout_));
    if (resp.entries_size() == 0) return std::optional<pb::Snapshot>();
    return std::optional<pb::Snapshot>(resp.entries(0).snapshot());
  }

  Status Delete(const volume::plugins::CsiDriver& driver, const std::string& id,
                const std::map<std::string, std::string>& secrets) override {
    pb::DeleteSnapshotRequest req;
    req.set_snapshot_id(id);
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    return driver.client->Call(&pb::Controller::Stub::DeleteSnapshot, req, timeout_).status();
  }

 private:
  const std::chrono::milliseconds timeout_;
};

bool Deleting(const api::ObjectMeta& m) { return m.deletion_timestamp.has_value(); }

// Whether an update is worth a sync, as external-snapshotter's sidecar judges it: not when only
// the status, the finalizers, the version or the being-created mark changed (its own writes),
// which would have it call the driver again at once, without backoff.
bool WorthASync(const api::VolumeSnapshotContent& old, const api::VolumeSnapshotContent& now) {
  auto essence = [](api::VolumeSnapshotContent c) {
    c.status.reset();
    c.metadata.finalizers.clear();
    c.metadata.resource_version.clear();
    if (c.metadata.unknown_fields.is_object()) c.metadata.unknown_fields.erase("managedFields");
    c.metadata.annotations.erase(std::string(api::kAnnSnapshotBeingCreated));
    return c;
  };
  return !(essence(old) == essence(now));
}

bool Ready(const api::VolumeSnapshotContent& c) {
  return c.status && c.status->ready_to_use.value_or(false);
}

// A gRPC error after which the driver may still be making the snapshot.
bool MayStillBeMaking(const Status& s) {
  switch (s.code()) {
    case StatusCode::kCancelled:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::unique_ptr<SnapshotCalls> NewCsiSnapshotCalls(std::chrono::milliseconds call_timeout) {
  return std::make_unique<CsiSnapshotCalls>(call_timeout);
}

Controller::Controller(client::Client& client, Options options)
    : client_(client), options_(std::move(options)), events_(options_.events) {
  if (options_.calls) {
    calls_ = options_.calls;
  } else {
    own_calls_ = NewCsiSnapshotCalls(options_.call_timeout);
    calls_ = own_calls_.get();
  }
}

Controller::~Controller() { Stop(); }

void Controller::Event(const api::VolumeSnapshotContent& content, std::string_view type,
                       std::string_view reason, std::string message) {
  if (events_) events_(client::ReferenceTo(content), type, reason, std::move(message));
}

std::shared_ptr<const volume::plugins::CsiDriver> Controller::DriverFor(
    const api::VolumeSnapshotContent& content) const {
  auto label = content.metadata.labels.find(std::string(snapshot::kManagedByLabel));
  const std::string node = label == content.metadata.labels.end() ? "" : label->second;
  if (node.empty() ? !options_.central : node != options_.node_name) return nullptr;
  return options_.drivers->Find(content.spec.driver);
}

StatusOr<std::map<std::string, std::string>> Controller::Secrets(
    const api::VolumeSnapshotContent& content) {
  const std::string name = Annotation(content.metadata, api::kAnnSnapshotDeletionSecretName);
  const std::string ns = Annotation(content.metadata, api::kAnnSnapshotDeletionSecretNamespace);
  if (name.empty() && ns.empty()) return std::map<std::string, std::string>();
  if (name.empty() || ns.empty()) {
    return InvalidArgumentError("cannot retrieve secrets for snapshot content " +
                                content.metadata.name +
                                ", err: secret name or namespace not specified");
  }
  auto secret = client_.resource<api::Secret>().Get(ns, name);
  if (!secret.ok()) {
    return Status(ApiStatus(secret.error()).code(),
                  "cannot get credentials for snapshot content " + content.metadata.name + ": " +
                      secret.error().message);
  }
  return volume::plugins::CsiSecrets(*secret);
}

Status Controller::SetAnnotation(const api::VolumeSnapshotContent& content, std::string_view key,
                                 bool on) {
  auto& contents = client_.resource<api::VolumeSnapshotContent>();
  auto current = contents.Get("", content.metadata.name);
  if (!current.ok()) return ApiStatus(current.error());
  if (HasAnnotation(current->metadata, key) == on) return OkStatus();
  if (on) {
    current->metadata.annotations[std::string(key)] = "yes";
  } else {
    current->metadata.annotations.erase(std::string(key));
  }
  auto written = contents.Update(*current);
  return written.ok() ? OkStatus() : ApiStatus(written.error());
}

Status Controller::WriteStatus(
    const api::VolumeSnapshotContent& content,
    const std::function<void(api::VolumeSnapshotContent&)>& change) {
  auto& contents = client_.resource<api::VolumeSnapshotContent>();
  auto current = contents.Get("", content.metadata.name);
  if (!current.ok()) return ApiStatus(current.error());
  const auto before = current->status;
  change(*current);
  if (current->status == before) return OkStatus();
  auto written = contents.UpdateStatus(*current);
  return written.ok() ? OkStatus() : ApiStatus(written.error());
}

Status Controller::ReportError(const api::VolumeSnapshotContent& content, std::string_view reason,
                               const std::string& message) {
  bool told = false;
  KVOL_RETURN_IF_ERROR(WriteStatus(content, [&](api::VolumeSnapshotContent& current) {
    auto& s = current.status ? *current.status : current.status.emplace();
    if (s.error && s.error->message == message) return;  // said already
    s.error = api::VolumeSnapshotError{.time = api::Time::FromTimePoint(options_.clock->Now()),
                                       .message = message};
    s.ready_to_use = false;
    told = true;
  }));
  if (told) Event(content, "Warning", reason, message);
  return OkStatus();
}

Status Controller::SyncContent(const api::VolumeSnapshotContent& content) {
  auto driver = DriverFor(content);
  if (!driver) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(bool supported, calls_->Supported(*driver));
  if (!supported) return OkStatus();  // left to an external snapshotter, if any
  const auto& src = content.spec.source;
  if (Deleting(content.metadata)) {
    const bool being_created = HasAnnotation(content.metadata, api::kAnnSnapshotBeingCreated);
    const bool unbound_import = src.snapshot_handle && content.spec.volume_snapshot_ref.uid.empty();
    if (unbound_import ||
        (!being_created && HasAnnotation(content.metadata, api::kAnnSnapshotBeingDeleted))) {
      return Delete(content, *driver);
    }
    if (!being_created) return OkStatus();  // deleted by hand while bound: the snapshot decides
    // A snapshot the driver may still be making is asked for again until the driver answers,
    // so that it is known, and then deleted, rather than leaked.
    KVOL_RETURN_IF_ERROR(Ready(content) ? SetAnnotation(content, api::kAnnSnapshotBeingCreated, false)
                         : src.volume_handle ? Create(content, *driver)
                                             : Check(content, *driver));
    return UnavailableError("content " + content.metadata.name +
                            " is deleted once its snapshot is known");
  }
  if (Ready(content)) return SetAnnotation(content, api::kAnnSnapshotBeingCreated, false);
  if (src.snapshot_handle) return Check(content, *driver);
  if (src.volume_handle) return Create(content, *driver);
  return OkStatus();
}

Status Controller::Create(const api::VolumeSnapshotContent& content,
                          const volume::plugins::CsiDriver& driver) {
  auto fail = [&](const std::string& why) -> Status {
    KVOL_RETURN_IF_ERROR(ReportError(content, "SnapshotCreationFailed",
                                     "Failed to create snapshot: " + why));
    return FailedPreconditionError(why);
  };
  if (content.spec.volume_snapshot_ref.uid.empty()) {
    return fail("cannot create snapshot. Snapshot content " + content.metadata.name +
                " not bound to a snapshot");
  }
  if (!content.spec.volume_snapshot_class_name) {
    return fail("failed to get input parameters to create snapshot for content " +
                content.metadata.name + ": \"failed to take snapshot " +
                content.spec.volume_snapshot_ref.name + " without a snapshot class\"");
  }
  auto cls = client_.resource<api::VolumeSnapshotClass>().Get("", *content.spec.volume_snapshot_class_name);
  if (!cls.ok()) {
    if (!api::IsNotFound(cls.error())) return ApiStatus(cls.error());
    return fail("failed to get input parameters to create snapshot for content " +
                content.metadata.name + ": \"" + cls.error().message + "\"");
  }
  auto secrets = Secrets(content);
  if (!secrets.ok()) {
    return fail("failed to get input parameters to create snapshot for content " +
                content.metadata.name + ": \"" + secrets.status().message() + "\"");
  }
  auto req = MakeCreateSnapshotRequest(content, *cls, *secrets);
  if (!req.ok()) return fail(req.status().message());
  KVOL_RETURN_IF_ERROR(SetAnnotation(content, api::kAnnSnapshotBeingCreated, true));
  auto snap = calls_->Create(driver, *req);
  if (!snap.ok()) {
    if (!MayStillBeMaking(snap.status())) {
      KVOL_RETURN_IF_ERROR(SetAnnotation(content, api::kAnnSnapshotBeingCreated, false));
    }
    return fail("failed to take snapshot of the volume " + req->source_volume_id() + ": \"" +
                snap.status().message() + "\"");
  }
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             options_.clock->Now().time_since_epoch()).count();
  KVOL_RETURN_IF_ERROR(WriteStatus(content, [&](api::VolumeSnapshotContent& current) {
    current.status = ContentStatus(current, *snap, now_ns);
  }));
  KVOL_RETURN_IF_ERROR(SetAnnotation(content, api::kAnnSnapshotBeingCreated, false));
  if (!snap->ready_to_use()) {
    return UnavailableError("snapshot " + snap->snapshot_id() + " is not ready yet");
  }
  return OkStatus();
}

Status Controller::Check(const api::VolumeSnapshotContent& content,
                         const volume::plugins::CsiDriver& driver) {
  const std::string& id = *content.spec.source.snapshot_handle;
  auto fail = [&](const std::string& why) -> Status {
    KVOL_RETURN_IF_ERROR(ReportError(content, "SnapshotContentCheckandUpdateFailed",
                                     "Failed to check and update snapshot content: "
                                     "failed to list snapshot for content " +
                                         content.metadata.name + ": \"" + why + "\""));
    return FailedPreconditionError(why);
  };
  std::map<std::string, std::string> secrets;
  if (content.spec.volume_snapshot_class_name) {
    auto cls = client_.resource<api::VolumeSnapshotClass>().Get("", *content.spec.volume_snapshot_class_name);
    if (cls.ok()) {
      auto name = cls->parameters.find(std::string(kParamListSecretName));
      auto ns = cls->parameters.find(std::string(kParamListSecretNamespace));
      if (name != cls->parameters.end() && ns != cls->parameters.end()) {
        auto secret = client_.resource<api::Secret>().Get(ns->second, name->second);
        if (!secret.ok()) return fail("cannot get list secret: " + secret.error().message);
        auto data = volume::plugins::CsiSecrets(*secret);
        if (!data.ok()) return fail(data.status().message());
        secrets = *std::move(data);
      }
    }
  }
  auto snap = calls_->Get(driver, id, secrets);
  if (!snap.ok()) return fail(snap.status().message());
  if (!*snap) return fail("can not find snapshot for snapshotID " + id);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             options_.clock->Now().time_since_epoch()).count();
  KVOL_RETURN_IF_ERROR(WriteStatus(content, [&](api::VolumeSnapshotContent& current) {
    current.status = ContentStatus(current, **snap, now_ns);
  }));
  if (!(*snap)->ready_to_use()) return UnavailableError("snapshot " + id + " is not ready yet");
  return OkStatus();
}

Status Controller::Delete(const api::VolumeSnapshotContent& content,
                          const volume::plugins::CsiDriver& driver) {
  std::string handle;
  if (content.status && content.status->snapshot_handle) handle = *content.status->snapshot_handle;
  if (handle.empty() && content.spec.source.snapshot_handle) handle = *content.spec.source.snapshot_handle;
  if (content.spec.deletion_policy == api::kSnapshotDeletionDelete && !handle.empty()) {
    auto secrets = Secrets(content);
    if (!secrets.ok()) {
      Event(content, "Warning", "SnapshotDeleteError", "Failed to get snapshot credentials");
      return secrets.status();
    }
    if (Status s = calls_->Delete(driver, handle, *secrets); !s.ok()) {
      Event(content, "Warning", "SnapshotDeleteError", "Failed to delete snapshot");
      return Status(s.code(), "failed to delete snapshot content " + content.metadata.name +
                                  ": \"" + s.message() + "\"");
    }
  }
  auto& contents = client_.resource<api::VolumeSnapshotContent>();
  auto current = contents.Get("", content.metadata.name);
  if (!current.ok()) return api::IsNotFound(current.error()) ? OkStatus() : ApiStatus(current.error());
  if (current->status && (current->status->snapshot_handle || current->status->ready_to_use)) {
    // The storage snapshot is gone: so is what the status said of it.
    api::VolumeSnapshotContent cleared = *current;
    cleared.status->snapshot_handle.reset();
    cleared.status->ready_to_use.reset();
    cleared.status->creation_time.reset();
    cleared.status->restore_size.reset();
    auto written = contents.UpdateStatus(cleared);
    if (!written.ok()) {
      Event(content, "Warning", "SnapshotDeleteError", "Failed to clear content status");
      return ApiStatus(written.error());
    }
    current = std::move(written);
  }
  if (!HasFinalizer(current->metadata, api::kContentBoundFinalizer)) return OkStatus();
  std::erase(current->metadata.finalizers, std::string(api::kContentBoundFinalizer));
  auto written = contents.Update(*current);
  if (!written.ok() && !api::IsNotFound(written.error())) return ApiStatus(written.error());
  return OkStatus();
}

void Controller::EnqueueAll() {
  for (const auto& c : contents_->List()) {
    if (DriverFor(*c)) queue_->Add(c->metadata.name);
  }
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  if (!events_) {
    recorder_ = std::make_unique<client::EventRecorder>(
        client_.resource<api::Event>(),
        client::EventRecorderOptions{.component = "csi-snapshotter_" + options_.node_name},
        *options_.clock);
    events_ = client::SinkTo(*recorder_);
  }
  queue_ = std::make_unique<client::WorkQueue>(
      *options_.clock, client::WorkQueueOptions{.name = "csi-snapshotter"});
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [this](const std::shared_ptr<const api::VolumeSnapshotContent>& c) {
    if (DriverFor(*c)) queue_->Add(c->metadata.name);
  };
  contents_ = &informers_->Handle<api::VolumeSnapshotContent>(
      {.on_add = changed, .on_update = [changed](const auto& old, const auto& now) {
         if (WorthASync(*old, *now)) changed(now);
       }});
  contents_->Start();
  if (!contents_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("csi-snapshotter: caches did not fill in time");
  }
  {
    std::lock_guard lock(self_->mu);
    self_->controller = this;
  }
  // A driver that registers serves at once the contents that waited for it.
  options_.drivers->OnAdd([self = self_](const std::string&) {
    std::lock_guard lock(self->mu);
    if (self->controller) self->controller->EnqueueAll();
  });
  auto sync = [this](const std::string& key) {
    auto c = contents_->Get("", key);
    return c ? SyncContent(*c) : OkStatus();
  };
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, sync] {
      SetThreadName("csi-snapshotter");
      client::RunWorker(*queue_, sync, "csi-snapshotter");
    });
  }
  return OkStatus();
}

void Controller::Stop() {
  {
    std::lock_guard lock(self_->mu);
    self_->controller = nullptr;
  }
  if (informers_) informers_->Stop();
  if (queue_) queue_->ShutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (recorder_) recorder_->Flush(std::chrono::seconds(2));
}

}  // namespace kvol::controller::snapshotter
