#include "apiserver/binding.h"

#include "api/names.h"
#include "api/pod_status.h"

namespace kvol::apiserver {
namespace {

ApiError BindingConflict(std::string_view name, std::string why) {
  ApiError e = Conflict(api::KindInfoOf<api::Pod>(), name, why);
  e.message = "Operation cannot be fulfilled on pods/binding \"" + std::string(name) + "\": " + why;
  e.kind = "pods/binding";
  return e;
}

}  // namespace

ApiOr<api::Pod> BindPod(Registry<api::Pod>& pods, std::string_view ns, std::string_view name,
                        const api::Binding& binding, const api::Time& now) {
  api::FieldErrors errs;
  const api::Path target("target");
  if (!binding.metadata.name.empty() && binding.metadata.name != name) {
    errs.push_back(api::Invalid(api::Path("metadata").Child("name"), binding.metadata.name,
                                "must match the pod's name (" + std::string(name) + ")"));
  }
  if (binding.target.name.empty()) {
    errs.push_back(api::Required(target.Child("name")));
  } else if (auto bad = api::IsDNS1123Subdomain(binding.target.name); !bad.empty()) {
    errs.push_back(api::Invalid(target.Child("name"), binding.target.name, bad.front()));
  }
  if (!binding.target.kind.empty() && binding.target.kind != "Node") {
    errs.push_back(api::NotSupported(target.Child("kind"), binding.target.kind, {"Node"}));
  }
  if (!errs.empty()) {
    ApiError e = Invalid(api::KindInfoOf<api::Pod>(), name, std::move(errs));
    e.message = "Binding \"" + std::string(name) + "\" is invalid: " + api::AggregateMessage(e.causes);
    e.kind = "Binding";
    return e;
  }

  std::optional<ApiError> refused;
  auto bound = pods.MutateWhole(ns, name, [&](api::Pod& pod) {
    refused.reset();
    if (pod.metadata.deletion_timestamp) {
      refused = BindingConflict(name, "pod " + std::string(name) +
                                          " is being deleted, cannot be assigned to a host");
      return false;
    }
    if (!pod.spec.node_name.empty()) {
      refused = BindingConflict(name, "pod " + std::string(name) + " is already assigned to node \"" +
                                          pod.spec.node_name + "\"");
      return false;
    }
    pod.spec.node_name = binding.target.name;
    for (const auto& [k, v] : binding.metadata.annotations) pod.metadata.annotations[k] = v;
    api::UpdatePodCondition(pod.status, {.type = "PodScheduled", .status = "True"}, now);
    return true;
  });
  if (refused) return *refused;
  return bound;
}

}  // namespace kvol::apiserver
