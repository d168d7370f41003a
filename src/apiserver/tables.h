// Table output (Accept: application/json;as=Table;g=meta.k8s.io;v=v1): the columns kubectl
// shows for each kind, computed on the server as Kubernetes does.
#pragma once

#include <string>
#include <vector>

#include "api/codec.h"
#include "os/clock.h"

namespace kvol::apiserver {

// A meta.k8s.io/v1 Table for `objects` (full JSON objects of one kind). `include_object` is
// "None", "Metadata" (default: PartialObjectMetadata) or "Object".
api::Json MakeTable(std::string_view kind, const std::vector<api::Json>& objects,
                    const std::string& resource_version, const std::string& continue_token,
                    std::string_view include_object, os::WallTime now, bool column_definitions);

// Kubernetes' HumanDuration: "45s", "3m12s", "5h", "2d3h", "3y".
std::string HumanDuration(std::chrono::seconds d);

}  // namespace kvol::apiserver
