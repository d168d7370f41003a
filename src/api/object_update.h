// A write of several objects, of any kinds, made together: each update decided as the update
// of its object alone would be, all of them in one commit of the store, an update that follows
// another made only if that one is (or needs no write). The PV controller writes a volume's
// binding and its claim's this way, so that a claim is never bound to a volume that is not
// bound to it, even across a crash, and a batch of bindings waits for one commit.
#pragma once

#include <memory>
#include <tuple>
#include <utility>
#include <variant>

#include "api/api_error.h"
#include "api/scheme.h"

namespace kvol::api {

namespace internal {
template <class Kinds>
struct KindVariants;
template <class... T>
struct KindVariants<std::tuple<T...>> {
  using Object = std::variant<T...>;
  using Shared = std::variant<std::shared_ptr<const T>...>;
};
}  // namespace internal

// An object of any kind kvol serves, and one as stored and shared.
using AnyObject = internal::KindVariants<AllKinds>::Object;
using AnySharedObject = internal::KindVariants<AllKinds>::Shared;

// Where kvol's API server takes such a write over HTTP: POST {"updates": [{"object": {...},
// "main": true, "status": false, "after": -1}, ...]}, answered {"results": [{"object": {...}}
// or {"status": {...}}, ...]} in order. Kubernetes has no such request.
inline constexpr std::string_view kUpdateTogetherPath = "/apis/kvol.io/v1/updatetogether";

struct ObjectUpdate {
  AnyObject object;
  bool main = true;     // metadata and spec: an update
  bool status = false;  // the status subresource (with `main`: both, in one write)
  // The index of an earlier update of the same write that must be made (or need no write) for
  // this one to be made; -1: none. An update that follows another needs its
  // metadata.resourceVersion.
  int after = -1;
};

template <class T>
ObjectUpdate UpdateOf(T obj, bool main, bool status, int after = -1) {
  return ObjectUpdate{AnyObject(std::in_place_type<T>, std::move(obj)), main, status, after};
}

// The object of kind T an update was answered with; nullptr when it is of another kind.
template <class T>
std::shared_ptr<const T> SharedAs(const AnySharedObject& o) {
  const auto* p = std::get_if<std::shared_ptr<const T>>(&o);
  return p ? *p : nullptr;
}

// An answer of one kind as an answer of any kind, and back (an object of another kind is an
// internal error).
template <class T>
ApiOr<AnySharedObject> ToAny(ApiOr<std::shared_ptr<const T>> r) {
  if (!r.ok()) return r.error();
  return AnySharedObject(*std::move(r));
}
template <class T>
ApiOr<std::shared_ptr<const T>> FromAny(const ApiOr<AnySharedObject>& r) {
  if (!r.ok()) return r.error();
  if (auto obj = SharedAs<T>(*r)) return obj;
  return ApiError{500, "InternalError", "an update answered with another kind", {}, {}, {}, {}};
}

inline const ObjectMeta& MetaOf(const AnyObject& o) {
  return std::visit([](const auto& obj) -> const ObjectMeta& { return obj.metadata; }, o);
}

}  // namespace kvol::api
