// A store that times every request it passes on, as kube-apiserver times its requests to etcd:
//   etcd_request_duration_seconds{operation,type}  histogram
// operation is get, list, create, update or delete; type is the resource the key belongs to
// ("persistentvolumeclaims", from "/registry/persistentvolumeclaims/<ns>/<name>"). kvol records
// it under that name for both of its stores, the embedded SQLite one and etcd. The writes of a
// WriteMany, committed together, are each recorded with the whole batch's duration: how long
// each of them waited.
#pragma once

#include <memory>

#include "store/store.h"

namespace kvol::store {

std::unique_ptr<Store> Instrumented(std::unique_ptr<Store> store);

// The type label of `key`.
std::string_view RequestType(std::string_view key);

}  // namespace kvol::store
