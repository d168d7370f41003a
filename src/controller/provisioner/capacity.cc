#include "controller/provisioner/capacity.h"

#include <algorithm>

#include "api/api_error.h"
#include "base/log.h"
#include "base/thread.h"
#include "client/worker.h"
#include "controller/provisioner/create_volume.h"

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;
using client::ApiStatus;

std::string LabelOf(const api::ObjectMeta& m, std::string_view key) {
  auto it = m.labels.find(std::string(key));
  return it == m.labels.end() ? std::string() : it->second;
}

// The driver's answer as the object's two sizes; unchanged objects are not written.
bool SetSizes(api::CSIStorageCapacity& c, const pb::GetCapacityResponse& resp) {
  std::optional<api::Quantity> capacity =
      api::Quantity::FromUnits(resp.available_capacity(), api::Quantity::Format::kBinarySI);
  std::optional<api::Quantity> maximum;
  if (resp.has_maximum_volume_size()) {
    maximum = api::Quantity::FromUnits(resp.maximum_volume_size().value(),
                                       api::Quantity::Format::kBinarySI);
  }
  if (c.capacity == capacity && c.maximum_volume_size == maximum) return false;
  c.capacity = capacity;
  c.maximum_volume_size = maximum;
  return true;
}

}  // namespace

std::vector<CapacitySegment> WantedSegments(
    const std::vector<std::shared_ptr<const api::StorageClass>>& classes,
    const std::map<std::string, std::map<std::string, std::string>>& drivers_here,
    const std::set<std::string>& tracked) {
  std::vector<CapacitySegment> out;
  for (const auto& cls : classes) {
    auto here = drivers_here.find(cls->provisioner);
    if (here == drivers_here.end() || !tracked.count(cls->provisioner)) continue;
    out.push_back({.class_name = cls->metadata.name, .driver = here->first,
                   .topology = here->second});
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.class_name < b.class_name; });
  return out;
}

pb::GetCapacityRequest MakeGetCapacityRequest(const api::StorageClass& cls,
                                              const CapacitySegment& segment) {
  pb::GetCapacityRequest req;
  for (const auto& [k, v] : cls.parameters) {
    if (k.rfind(kParamPrefix, 0) != 0) (*req.mutable_parameters())[k] = v;
  }
  if (!segment.topology.empty()) {
    auto& seg = *req.mutable_accessible_topology()->mutable_segments();
    for (const auto& [k, v] : segment.topology) seg[k] = v;
  }
  return req;
}

std::string ManagedBy(const std::string& node) {
  std::string s = "kvol-provisioner-" + node;
  if (s.size() > 63) s.resize(63);
  while (!s.empty() && !std::isalnum(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

bool IsObjectOf(const api::CSIStorageCapacity& o, const CapacitySegment& segment) {
  return o.storage_class_name == segment.class_name &&
         LabelOf(o.metadata, kLabelDriverName) == segment.driver && o.node_topology &&
         o.node_topology->match_expressions.empty() &&
         std::map<std::string, std::string>(o.node_topology->match_labels.begin(),
                                            o.node_topology->match_labels.end()) ==
             segment.topology;
}

api::CSIStorageCapacity MakeCapacityObject(const CapacitySegment& segment,
                                           const std::string& node, const std::string& ns,
                                           const pb::GetCapacityResponse& resp) {
  api::CSIStorageCapacity c;
  c.metadata.namespace_ = ns;
  c.metadata.generate_name = "csisc-";
  c.metadata.labels[std::string(kLabelDriverName)] = segment.driver;
  c.metadata.labels[std::string(kLabelManagedBy)] = ManagedBy(node);
  c.storage_class_name = segment.class_name;
  auto& topology = c.node_topology.emplace();
  for (const auto& [k, v] : segment.topology) topology.match_labels[k] = v;
  SetSizes(c, resp);
  return c;
}

CapacityPublisher::CapacityPublisher(client::Client& client, CapacityOptions options)
    : client_(client), options_(std::move(options)) {}

CapacityPublisher::~CapacityPublisher() { Stop(); }

void CapacityPublisher::Refresh() {
  std::lock_guard lock(kick_->mu);
  kick_->wanted = true;
  kick_->cv.notify_all();
}

Status CapacityPublisher::Sync() {
  std::map<std::string, std::map<std::string, std::string>> here;
  std::map<std::string, std::shared_ptr<const volume::plugins::CsiDriver>> drivers;
  for (const auto& name : options_.drivers->Names()) {
    if (auto d = options_.drivers->Find(name)) {
      here[name] = d->topology;
      drivers[name] = d;
    }
  }
  std::set<std::string> tracked;
  for (const auto& d : csidrivers_->List()) {
    if (d->spec.storage_capacity.value_or(false)) tracked.insert(d->metadata.name);
  }
  const std::string managed_by = ManagedBy(options_.node_name);
  std::vector<std::shared_ptr<const api::CSIStorageCapacity>> mine;
  for (const auto& c : capacities_->List()) {
    if (c->metadata.namespace_ == options_.namespace_ &&
        LabelOf(c->metadata, kLabelManagedBy) == managed_by) {
      mine.push_back(c);
    }
  }
  auto& resource = client_.resource<api::CSIStorageCapacity>();
  Status result = OkStatus();
  std::set<std::string> kept;
  for (const auto& segment : WantedSegments(classes_->List(), here, tracked)) {
    auto cls = classes_->Get("", segment.class_name);
    const auto& driver = *drivers.at(segment.driver);
    auto offers = driver.client->ControllerSupports(
        pb::ControllerServiceCapability::RPC::GET_CAPACITY);
    if (!offers.ok() || !*offers) continue;  // not a capacity it can report; nothing kept
    auto resp = driver.client->Call(&pb::Controller::Stub::GetCapacity,
                                    MakeGetCapacityRequest(*cls, segment), options_.call_timeout);
    auto existing = std::find_if(mine.begin(), mine.end(),
                                 [&](const auto& o) { return IsObjectOf(*o, segment); });
    if (!resp.ok()) {
      // The object keeps its last answer until the driver answers again.
      if (existing != mine.end()) kept.insert((*existing)->metadata.name);
      result = resp.status();
      continue;
    }
    if (existing == mine.end()) {
      api::CSIStorageCapacity obj =
          MakeCapacityObject(segment, options_.node_name, options_.namespace_, *resp);
      auto node = client_.resource<api::Node>().Get("", options_.node_name);
      if (node.ok()) {
        obj.metadata.owner_references.push_back({.api_version = "v1",
                                                 .kind = "Node",
                                                 .name = node->metadata.name,
                                                 .uid = node->metadata.uid});
      }
      auto created = resource.Create(obj);
      if (!created.ok()) result = ApiStatus(created.error());
      continue;
    }
    kept.insert((*existing)->metadata.name);
    api::CSIStorageCapacity next = **existing;
    if (!SetSizes(next, *resp)) continue;
    auto updated = resource.Update(next);
    if (!updated.ok() && !api::IsNotFound(updated.error())) result = ApiStatus(updated.error());
  }
  for (const auto& o : mine) {
    if (kept.count(o->metadata.name)) continue;
    auto gone = resource.Delete(o->metadata.namespace_, o->metadata.name);
    if (!gone.ok() && !api::IsNotFound(gone.error())) result = ApiStatus(gone.error());
  }
  return result;
}

Status CapacityPublisher::Start(std::chrono::milliseconds sync_timeout) {
  informers_ = std::make_unique<client::InformerScope>(
      client_, options_.informers, client::InformerOptions{.clock = options_.clock});
  auto changed = [kick = kick_](const auto&...) {
    std::lock_guard lock(kick->mu);
    kick->wanted = true;
    kick->cv.notify_all();
  };
  classes_ = &informers_->Handle<api::StorageClass>(
      {.on_add = changed, .on_update = changed, .on_delete = changed});
  csidrivers_ = &informers_->Handle<api::CSIDriver>(
      {.on_add = changed, .on_update = changed, .on_delete = changed});
  capacities_ = &informers_->Get<api::CSIStorageCapacity>();
  classes_->Start();
  csidrivers_->Start();
  capacities_->Start();
  if (!classes_->WaitForSync(sync_timeout) || !csidrivers_->WaitForSync(sync_timeout) ||
      !capacities_->WaitForSync(sync_timeout)) {
    Stop();
    return UnavailableError("csi capacity: caches did not fill in time");
  }
  options_.drivers->OnAdd([kick = kick_](const std::string&) {
    std::lock_guard lock(kick->mu);
    kick->wanted = true;
    kick->cv.notify_all();
  });
  thread_ = std::thread([this] {
    SetThreadName("csi-capacity");
    std::unique_lock lock(kick_->mu);
    while (!kick_->stopping) {
      kick_->wanted = false;
      lock.unlock();
      if (Status s = Sync(); !s.ok()) log::Warn("csi capacity: " + s.message());
      lock.lock();
      // At most one pass per min_interval: a burst of volumes made or deleted costs one more
      // pass, not one per volume.
      const auto rested = options_.clock->Monotonic() + options_.min_interval;
      while (!kick_->stopping && options_.clock->Monotonic() < rested) {
        options_.clock->WaitUntil(kick_->cv, lock, rested);
      }
      if (kick_->stopping) break;
      if (!kick_->wanted) {
        options_.clock->WaitFor(kick_->cv, lock, options_.poll);
      }
    }
  });
  return OkStatus();
}

void CapacityPublisher::Stop() {
  {
    std::lock_guard lock(kick_->mu);
    kick_->stopping = true;
  }
  kick_->cv.notify_all();
  if (informers_) informers_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kvol::controller::provisioner
