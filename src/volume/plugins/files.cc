// configMap, secret, downwardAPI and projected volumes: files computed from API objects and the
// pod, written by the atomic writer. Secret and projected volumes sit on a tmpfs so their
// contents never reach the node's disk. SetUp runs again whenever a source changes.
#include "api/api_error.h"
#include "api/authentication.h"
#include "volume/plugins/common.h"
#include "volume/plugins/plugins.h"
#include "volume/util/atomic_writer.h"
#include "volume/util/payload.h"

namespace kvol::volume::plugins {
namespace {

using util::Payload;

// Computes a payload from the pod and the Host's objects.
using PayloadFunc = std::function<StatusOr<Payload>(Host&, const api::Pod&)>;

class FilesMounter final : public Mounter, PodDirVolume {
 public:
  FilesMounter(Host& host, std::string_view plugin, const api::Pod& pod, const Spec& spec,
               bool tmpfs, PayloadFunc payload)
      : PodDirVolume(host, plugin, pod.metadata.uid, spec.Name()),
        pod_(pod),
        tmpfs_(tmpfs),
        payload_(std::move(payload)) {}
  std::string GetPath() const override { return path(); }
  bool ReadOnly() const override { return true; }
  Status SetUp() override {
    // The payload first: a missing source leaves no empty directory looking ready.
    KVOL_ASSIGN_OR_RETURN(Payload payload, payload_(host_, pod_));
    if (tmpfs_) {
      KVOL_RETURN_IF_ERROR(EnsureTmpfs(host_, path(), 0));
    } else {
      KVOL_RETURN_IF_ERROR(MakeDir(path(), 0777));
    }
    return util::WriteAtomically(path(), payload, host_.clock().Now()).status();
  }

 private:
  const api::Pod pod_;
  const bool tmpfs_;
  const PayloadFunc payload_;
};

class FilesPlugin final : public VolumePlugin {
 public:
  using Supports = bool (*)(const Spec&);
  using MakePayload = PayloadFunc (*)(const Spec&);
  FilesPlugin(Host& host, std::string_view name, bool tmpfs, Supports supports, MakePayload make)
      : host_(host), name_(name), tmpfs_(tmpfs), supports_(supports), make_(make) {}
  std::string_view Name() const override { return name_; }
  bool CanSupport(const Spec& spec) const override { return !spec.pv && supports_(spec); }
  bool RequiresRemount(const Spec&) override { return true; }
  StatusOr<std::unique_ptr<Mounter>> NewMounter(const Spec& spec, const api::Pod& pod) override {
    return std::unique_ptr<Mounter>(
        std::make_unique<FilesMounter>(host_, name_, pod, spec, tmpfs_, make_(spec)));
  }
  StatusOr<std::unique_ptr<Unmounter>> NewUnmounter(std::string_view name,
                                                    std::string_view pod_uid) override {
    return std::unique_ptr<Unmounter>(
        std::make_unique<CleanupUnmounter>(host_, name_, pod_uid, name, true));
  }

 private:
  Host& host_;
  const std::string_view name_;
  const bool tmpfs_;
  const Supports supports_;
  const MakePayload make_;
};

// The object, nullptr when it is missing and `optional`, or the error ("configmap \"x\" not
// found").
template <class T>
StatusOr<std::optional<T>> Fetch(StatusOr<T> got, bool optional) {
  if (got.ok()) return std::optional<T>(*std::move(got));
  if (got.status().code() == StatusCode::kNotFound && optional) return std::optional<T>();
  return got.status();
}

StatusOr<Payload> ConfigMapFiles(Host& host, const std::string& ns, const std::string& name,
                                 const std::vector<api::KeyToPath>& items, int32_t mode,
                                 bool optional) {
  KVOL_ASSIGN_OR_RETURN(auto cm, Fetch(host.GetConfigMap(ns, name), optional));
  return util::ConfigMapPayload(cm ? &*cm : nullptr, items, mode, optional);
}

StatusOr<Payload> SecretFiles(Host& host, const std::string& ns, const std::string& name,
                              const std::vector<api::KeyToPath>& items, int32_t mode,
                              bool optional) {
  KVOL_ASSIGN_OR_RETURN(auto secret, Fetch(host.GetSecret(ns, name), optional));
  return util::SecretPayload(secret ? &*secret : nullptr, items, mode, optional);
}

PayloadFunc ConfigMapPayload(const Spec& spec) {
  api::ConfigMapVolumeSource src = *spec.volume.config_map;
  return [src](Host& host, const api::Pod& pod) {
    return ConfigMapFiles(host, pod.metadata.namespace_, src.name, src.items,
                          src.default_mode.value_or(util::kDefaultFileMode),
                          src.optional.value_or(false));
  };
}

PayloadFunc SecretPayload(const Spec& spec) {
  api::SecretVolumeSource src = *spec.volume.secret;
  return [src](Host& host, const api::Pod& pod) {
    return SecretFiles(host, pod.metadata.namespace_, src.secret_name, src.items,
                       src.default_mode.value_or(util::kDefaultFileMode),
                       src.optional.value_or(false));
  };
}

PayloadFunc DownwardApiPayload(const Spec& spec) {
  api::DownwardAPIVolumeSource src = *spec.volume.downward_api;
  return [src](Host& host, const api::Pod& pod) {
    return util::DownwardApiPayload(
        src.items, pod, src.default_mode.value_or(util::kDefaultFileMode), host.NodeAllocatable());
  };
}

PayloadFunc ProjectedPayload(const Spec& spec) {
  api::ProjectedVolumeSource src = *spec.volume.projected;
  return [src](Host& host, const api::Pod& pod) -> StatusOr<Payload> {
    const int32_t mode = src.default_mode.value_or(util::kDefaultFileMode);
    const std::string& ns = pod.metadata.namespace_;
    Payload all;
    for (const auto& source : src.sources) {
      Payload part;
      if (source.config_map) {
        const auto& c = *source.config_map;
        KVOL_ASSIGN_OR_RETURN(
            part, ConfigMapFiles(host, ns, c.name, c.items, mode, c.optional.value_or(false)));
      } else if (source.secret) {
        const auto& s = *source.secret;
        KVOL_ASSIGN_OR_RETURN(
            part, SecretFiles(host, ns, s.name, s.items, mode, s.optional.value_or(false)));
      } else if (source.downward_api) {
        KVOL_ASSIGN_OR_RETURN(part, util::DownwardApiPayload(source.downward_api->items, pod, mode,
                                                             host.NodeAllocatable()));
      } else if (source.service_account_token) {
        const auto& t = *source.service_account_token;
        KVOL_ASSIGN_OR_RETURN(
            auto token,
            host.ServiceAccountToken(pod, t.audience,
                                     t.expiration_seconds.value_or(
                                         api::authentication::kDefaultTokenExpirationSeconds)));
        part[t.path] = {std::move(token.token), mode};
      }
      for (auto& [path, file] : part) all[path] = std::move(file);
    }
    return all;
  };
}

}  // namespace

std::unique_ptr<VolumePlugin> NewConfigMapPlugin(Host& host) {
  return std::make_unique<FilesPlugin>(
      host, kConfigMap, false, [](const Spec& s) { return s.volume.config_map.has_value(); },
      ConfigMapPayload);
}

std::unique_ptr<VolumePlugin> NewSecretPlugin(Host& host) {
  return std::make_unique<FilesPlugin>(
      host, kSecret, true, [](const Spec& s) { return s.volume.secret.has_value(); },
      SecretPayload);
}

std::unique_ptr<VolumePlugin> NewDownwardApiPlugin(Host& host) {
  return std::make_unique<FilesPlugin>(
      host, kDownwardApi, false, [](const Spec& s) { return s.volume.downward_api.has_value(); },
      DownwardApiPayload);
}

std::unique_ptr<VolumePlugin> NewProjectedPlugin(Host& host) {
  return std::make_unique<FilesPlugin>(
      host, kProjected, true, [](const Spec& s) { return s.volume.projected.has_value(); },
      ProjectedPayload);
}

std::vector<std::unique_ptr<VolumePlugin>> InTreePlugins(Host& host) {
  std::vector<std::unique_ptr<VolumePlugin>> out;
  out.push_back(NewEmptyDirPlugin(host));
  out.push_back(NewHostPathPlugin(host));
  out.push_back(NewLocalPlugin(host));
  out.push_back(NewNfsPlugin(host));
  out.push_back(NewConfigMapPlugin(host));
  out.push_back(NewSecretPlugin(host));
  out.push_back(NewDownwardApiPlugin(host));
  out.push_back(NewProjectedPlugin(host));
  return out;
}

}  // namespace kvol::volume::plugins
