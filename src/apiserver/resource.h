// The operations the API offers on one kind, with the options of Kubernetes' list, watch,
// create, update, patch and delete requests. Registry<T> (registry.h) implements them for each
// kind; the HTTP layer and the in-process client both call them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/object_update.h"
#include "api/request_options.h"
#include "api/scheme.h"
#include "apiserver/errors.h"
#include "store/store.h"

namespace kvol::apiserver {

using api::DeleteOptions;
using api::ListOptions;
using api::WriteOptions;

// An object as written or read: its JSON as stored (without resourceVersion) and its revision.
struct StoredObject {
  store::Value json;
  store::Revision rev = 0;
  bool deleted = false;                // a delete removed it from the store
  std::vector<std::string> warnings;   // for the Warning header
  std::string Json() const;            // with metadata.resourceVersion
};

struct ListOut {
  std::vector<StoredObject> items;
  store::Revision rev = 0;
  std::string continue_token;
  std::optional<int64_t> remaining;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  StoredObject object;  // for kBookmark only rev is set
};

class EventStream {
 public:
  virtual ~EventStream() = default;
  // Events in order; empty on timeout. After an error the stream is over; OutOfRange means
  // the client must list again (sent as a 410 Expired ERROR event).
  virtual StatusOr<std::vector<WatchEvent>> Next(std::chrono::milliseconds timeout) = 0;
  virtual void Close() = 0;
  // Every event up to this revision has been returned by Next(): what a bookmark carries.
  virtual store::Revision Progress() const = 0;
  // Whether the stream says when it has news (SetNotify): one that does not is waited on with
  // Next by a thread of its own.
  virtual bool Notifies() const { return false; }
  // `fn` is called, from any thread and possibly with locks held (it must only schedule work),
  // whenever Next would return something without waiting.
  virtual void SetNotify(std::function<void()> /*fn*/) {}
};

// One kind's API, type-erased for the HTTP layer. Bodies and results are JSON; errors are
// Kubernetes Status errors.
class Resource {
 public:
  virtual ~Resource() = default;
  virtual const api::KindInfo& info() const = 0;
  virtual bool has_status() const = 0;
  // How many objects are stored (as the watch cache holds them now).
  virtual size_t StoredCount() = 0;

  virtual ApiOr<StoredObject> CreateJson(std::string_view ns, const api::Json& body,
                                         const WriteOptions& opts) = 0;
  virtual ApiOr<StoredObject> GetStored(std::string_view ns, std::string_view name) = 0;
  virtual ApiOr<StoredObject> UpdateJson(std::string_view ns, std::string_view name,
                                         const api::Json& body, bool status,
                                         const WriteOptions& opts) = 0;
  // The same from a JSON request body's text: decoded straight to the kind where the text is
  // plain, through a Json tree otherwise (and then BadRequest if it does not parse).
  virtual ApiOr<StoredObject> CreateJsonText(std::string_view ns, std::string_view body,
                                             const WriteOptions& opts) = 0;
  virtual ApiOr<StoredObject> UpdateJsonText(std::string_view ns, std::string_view name,
                                             std::string_view body, bool status,
                                             const WriteOptions& opts) = 0;
  // Several updates in one request (kvol's PUT on a collection; see rest.cc): `body` is a list
  // of this kind's objects (`<Kind>List`), each written as a PUT of the object (`main`), of
  // its status (`status`), or of both at once, and answered in order as that PUT would be
  // answered; their writes are committed together. An error of the body as a whole (it does
  // not parse, it is not such a list) answers the request alone.
  virtual ApiOr<std::vector<ApiOr<StoredObject>>> UpdateManyJsonText(
      std::string_view ns, std::string_view body, bool main, bool status,
      const WriteOptions& opts) = 0;
  virtual ApiOr<StoredObject> PatchJson(std::string_view ns, std::string_view name,
                                        std::string_view content_type, std::string_view patch,
                                        bool status, const WriteOptions& opts) = 0;
  virtual ApiOr<StoredObject> DeleteStored(std::string_view ns, std::string_view name,
                                           const DeleteOptions& opts) = 0;
  virtual ApiOr<ListOut> ListStored(std::string_view ns, const ListOptions& opts) = 0;
  virtual ApiOr<std::unique_ptr<EventStream>> WatchStored(std::string_view ns,
                                                          const ListOptions& opts) = 0;

  // Decodes a stored object for table printing and similar read-only uses.
  virtual ApiOr<api::Json> Decode(const StoredObject& o) = 0;
  // A request body as an object of this kind (checked as an update's body is), for
  // Api::UpdateTogether.
  virtual ApiOr<api::AnyObject> DecodeAny(const api::Json& body) = 0;
};

}  // namespace kvol::apiserver
