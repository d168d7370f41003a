// The populator: pod volumes -> desired volumes.
#include "node/volumemanager/populator.h"

#include "api/pod_status.h"
#include "api/volume_sources.h"
#include "api/well_known.h"
#include "volume/util/payload.h"

namespace kvol::node::volumemanager {

bool PodNeedsVolumes(const api::Pod& pod) {
  if (pod.metadata.deletion_timestamp) return false;
  return pod.status.phase != "Succeeded" && pod.status.phase != "Failed";
}

namespace {

// What a volume's files are computed from, so that a change to any of it is seen.
std::string ContentVersion(const api::Volume& v, const api::Pod& pod, const Lookups& lookups) {
  const std::string& ns = pod.metadata.namespace_;
  std::string out;
  auto pod_fields = [&] {
    // downwardAPI reads the pod's metadata and a few spec/status fields.
    out += "pod:" + volume::util::FormatMap(pod.metadata.labels) + "|" +
           volume::util::FormatMap(pod.metadata.annotations) + "|" + pod.status.pod_ip + "|" +
           pod.status.host_ip + ";";
  };
  if (v.config_map) out += "cm:" + lookups.config_map_version(ns, v.config_map->name) + ";";
  if (v.secret) out += "secret:" + lookups.secret_version(ns, v.secret->secret_name) + ";";
  if (v.downward_api) pod_fields();
  if (v.projected) {
    for (const auto& s : v.projected->sources) {
      if (s.config_map) out += "cm:" + lookups.config_map_version(ns, s.config_map->name) + ";";
      if (s.secret) out += "secret:" + lookups.secret_version(ns, s.secret->name) + ";";
      if (s.downward_api) pod_fields();
    }
  }
  return out;
}

// What is to grow on the node for a claim whose volume grew: nothing unless the claim says so
// (FileSystemResizePending) and the volume is larger than the claim.
std::optional<DesiredVolume::FsResize> FsResizeOf(const api::PersistentVolumeClaim& claim,
                                                  const api::PersistentVolume& pv) {
  const bool pending = api::HasClaimCondition(claim.status, api::kClaimFileSystemResizePending);
  auto pv_size = pv.spec.capacity.find("storage");
  auto claim_size = claim.status.capacity.find("storage");
  if (!pending || pv_size == pv.spec.capacity.end()) return std::nullopt;
  if (claim_size != claim.status.capacity.end() && !(claim_size->second < pv_size->second)) {
    return std::nullopt;
  }
  DesiredVolume::FsResize r;
  r.claim_namespace = claim.metadata.namespace_;
  r.claim_name = claim.metadata.name;
  r.claim_uid = claim.metadata.uid;
  r.new_size = pv_size->second;
  r.old_size = claim_size == claim.status.capacity.end() ? 0 : claim_size->second.Value();
  return r;
}

}  // namespace

DesiredPod Populate(std::shared_ptr<const api::Pod> pod, const Lookups& lookups,
                    volume::PluginManager& plugins, uint64_t resync) {
  DesiredPod out;
  out.pod = pod;
  const std::string& ns = pod->metadata.namespace_;
  for (const auto& v : pod->spec.volumes) {
    volume::Spec spec;
    spec.volume = v;
    std::optional<DesiredVolume::FsResize> fs_resize;
    if (auto claim_name = api::ClaimNameOf(*pod, v)) {
      const std::string prefix = "error processing PVC " + ns + "/" + *claim_name + ": ";
      auto claim = lookups.claim(ns, *claim_name);
      if (!claim) {
        out.unresolved[v.name] = prefix + "persistentvolumeclaim \"" + *claim_name + "\" not found";
        continue;
      }
      if (v.ephemeral) {
        if (auto refused = api::EphemeralClaimNotForPod(*pod, *claim)) {
          out.unresolved[v.name] = prefix + *refused;
          continue;
        }
      }
      if (claim->status.phase != "Bound" || claim->spec.volume_name.empty()) {
        out.unresolved[v.name] = prefix + "PVC is not bound";
        continue;
      }
      auto pv = lookups.volume(claim->spec.volume_name);
      if (!pv) {
        out.unresolved[v.name] =
            prefix + "persistentvolume \"" + claim->spec.volume_name + "\" not found";
        continue;
      }
      if (!pv->spec.claim_ref || pv->spec.claim_ref->uid != claim->metadata.uid) {
        out.unresolved[v.name] =
            prefix + "volume \"" + pv->metadata.name + "\" is not bound to this claim";
        continue;
      }
      spec.pv = *pv;
      spec.read_only = v.persistent_volume_claim && v.persistent_volume_claim->read_only;
      fs_resize = FsResizeOf(*claim, *pv);
    }
    auto plugin = plugins.FindBySpec(spec);
    if (!plugin.ok()) {
      out.unresolved[v.name] = plugin.status().message();
      out.missing_plugin = out.missing_plugin || plugin.status().code() == StatusCode::kNotFound;
      continue;
    }
    const bool block = spec.pv && spec.pv->spec.volume_mode.value_or("Filesystem") == "Block";
    if (block && !(*plugin)->AsBlock()) {
      out.unresolved[v.name] = "volume plugin " + std::string((*plugin)->Name()) +
                               " cannot give volume " + spec.Name() + " as a block device";
      continue;
    }
    DesiredVolume d;
    d.block = block;
    d.outer_name = v.name;
    d.plugin = *plugin;
    if (d.plugin->RequiresRemount(spec)) {
      d.content_version = ContentVersion(v, *pod, lookups);
      if (d.content_version.empty()) d.content_version = "resync:" + std::to_string(resync);
    }
    d.unique_name = UniqueVolumeName(d.plugin->Name(), spec.Name());
    if (auto* at = d.plugin->AsAttachable()) d.attach = at->NeedsAttach(spec);
    if (d.plugin->AsNodeExpandable() && !block) d.fs_resize = std::move(fs_resize);
    // A block volume may be staged too (a CSI driver's NodeStageVolume); the plugin says.
    if (auto* dm = d.plugin->AsDeviceMountable()) d.device_mount = dm->NeedsDeviceMount(spec);
    d.spec = std::move(spec);
    out.volumes[VolumeKey(pod->metadata.uid, d.plugin->Name(), d.spec.Name())] = std::move(d);
  }
  return out;
}

}  // namespace kvol::node::volumemanager
