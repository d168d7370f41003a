// The loop every controller worker runs.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "base/status.h"
#include "client/workqueue.h"

namespace kvol::client {

// An API error as the Status a sync returns: a conflict is Aborted (retried quietly), 404
// NotFound, 409 AlreadyExists, 5xx Unavailable, anything else Unknown.
Status ApiStatus(const api::ApiError& e);

// Hands `queue`'s keys to `sync` until the queue shuts down. Success forgets the key's past
// failures; an error puts the key back with per-key backoff, logged as "`who`: key: message"
// unless it is a conflict (Aborted), which the next attempt resolves.
void RunWorker(client::WorkQueue& queue, const std::function<Status(const std::string&)>& sync,
               std::string_view who);

// RunWorker for a sync that takes up to `max` keys at once (whatever the queue holds) and
// answers each in order.
void RunBatchWorker(
    client::WorkQueue& queue, size_t max,
    const std::function<std::vector<Status>(const std::vector<std::string>&)>& sync,
    std::string_view who);

}  // namespace kvol::client
