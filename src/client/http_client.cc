// Each kind's Resource as REST calls: Kubernetes' paths, query parameters, bodies and Status
// errors; watches as streams of newline-delimited JSON events.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "client/http.h"
#include "client/http_transport.h"
#include "manifest/manifest.h"

namespace kvol::client {
namespace {

using api::Json;

ApiError FromTransport(const Status& s) {
  switch (s.code()) {
    case StatusCode::kDeadlineExceeded:
      return ApiError{504, "Timeout", s.message(), {}, {}, {}, {}};
    case StatusCode::kInvalidArgument:
      return ApiError{400, "BadRequest", s.message(), {}, {}, {}, {}};
    default:
      return ApiError{503, "ServiceUnavailable", s.message(), {}, {}, {}, {}};
  }
}

ApiError FromResponse(const HttpResponse& r) {
  auto j = api::ParseJson(r.body);
  if (j.ok()) return ApiError::FromStatusJson(*j, r.status);
  std::string body = r.body.substr(0, 512);
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  return ApiError::FromStatusJson(Json(body.empty() ? "HTTP " + std::to_string(r.status) : body),
                                  r.status);
}

// The kind an answer should be: a served kind's, or a subresource's.
template <class T>
std::string KindName() {
  if constexpr (std::is_same_v<T, api::authentication::TokenRequest>) {
    return "TokenRequest";
  } else {
    return std::string(api::KindInfoOf<T>().kind);
  }
}

template <class T>
ApiOr<T> DecodeObject(const Json& j) {
  api::FieldErrors errs;
  T obj = api::DecodeStruct<T>(j, &errs);
  if (!errs.empty()) {
    return ApiError{500,
                    "InternalError",
                    "the server's " + KindName<T>() +
                        " does not decode: " + api::AggregateMessage(errs),
                    {},
                    {},
                    {},
                    {}};
  }
  return obj;
}

template <class T>
ApiOr<T> ObjectOf(const StatusOr<HttpResponse>& r) {
  if (!r.ok()) return FromTransport(r.status());
  if (r->status < 200 || r->status >= 300) return FromResponse(*r);
  T obj;
  if (api::DecodeJsonText(r->body, obj)) return obj;
  auto j = api::ParseJson(r->body);
  if (!j.ok()) {
    return ApiError{
        500, "InternalError", "the response does not parse: " + j.status().message(), {}, {}, {},
        {}};
  }
  return DecodeObject<T>(*j);
}

void AddQuery(std::string& target, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  target += target.find('?') == std::string::npos ? '?' : '&';
  target += key;
  target += '=';
  target += QueryEscape(value);
}

void AddWriteOptions(std::string& target, const WriteOptions& opts) {
  if (opts.dry_run) AddQuery(target, "dryRun", "All");
  AddQuery(target, "fieldValidation", opts.field_validation);
}

void AddListOptions(std::string& target, const ListOptions& opts) {
  AddQuery(target, "labelSelector", opts.label_selector);
  AddQuery(target, "fieldSelector", opts.field_selector);
  AddQuery(target, "resourceVersion", opts.resource_version);
  AddQuery(target, "resourceVersionMatch", opts.resource_version_match);
  if (opts.limit > 0) AddQuery(target, "limit", std::to_string(opts.limit));
  AddQuery(target, "continue", opts.continue_token);
}

// A watch event as the server writes it, for decoding straight from its text.
template <class T>
struct TextEvent {
  std::string type;
  T object;
  KVOL_FIELDS(TextEvent) {
    v("type", s.type);
    v("object", s.object);
  }
};

// The answer to a PUT on a collection (kvol's batch of updates) when every update succeeded,
// for decoding straight from its text; a Status among the items sends it the slow way.
template <class T>
struct TextWritten {
  std::vector<T> items;
  KVOL_FIELDS(TextWritten) { v("items", s.items); }
};

// False for a type this client does not know (skipped, as client-go does).
bool ParseEventType(std::string_view type, EventType* out) {
  if (type == "ADDED")
    *out = EventType::kAdded;
  else if (type == "MODIFIED")
    *out = EventType::kModified;
  else if (type == "DELETED")
    *out = EventType::kDeleted;
  else if (type == "BOOKMARK")
    *out = EventType::kBookmark;
  else
    return false;
  return true;
}

template <class T>
class HttpWatcher final : public Watcher<T> {
 public:
  explicit HttpWatcher(std::unique_ptr<HttpLineStream> s) : stream_(std::move(s)) {}
  ~HttpWatcher() override { stream_->Close(); }

  ApiOr<std::vector<WatchEvent<T>>> Next(std::chrono::milliseconds timeout) override {
    if (ended_) return *ended_;
    auto lines = stream_->Next(timeout);
    if (!lines.ok()) {
      if (lines.status().code() == StatusCode::kOutOfRange ||
          lines.status().code() == StatusCode::kCancelled) {
        ended_ = WatchClosed(lines.status().message());
      } else {
        ended_ = FromTransport(lines.status());
      }
      return *ended_;
    }
    std::vector<WatchEvent<T>> out;
    out.reserve(lines->size());
    for (const auto& line : *lines) {
      TextEvent<T> fast;
      if (api::DecodeJsonText(line, fast) && fast.type != "ERROR") {
        WatchEvent<T> e;
        if (ParseEventType(fast.type, &e.type)) {
          e.object = std::make_shared<const T>(std::move(fast.object));
          out.push_back(std::move(e));
        }
        continue;
      }
      auto j = api::ParseJson(line);
      if (!j.ok() || !j->is_object() || !(*j)["type"].is_string()) {
        ended_ = ApiError{500,
                          "InternalError",
                          "a watch event does not parse: " + line.substr(0, 200),
                          {},
                          {},
                          {},
                          {}};
        break;
      }
      const std::string& type = (*j)["type"].get_ref<const std::string&>();
      const Json& object = (*j)["object"];
      if (type == "ERROR") {
        ended_ = ApiError::FromStatusJson(object, 500);
        break;
      }
      WatchEvent<T> e;
      if (!ParseEventType(type, &e.type)) continue;
      auto obj = DecodeObject<T>(object);
      if (!obj.ok()) {
        ended_ = obj.error();
        break;
      }
      e.object = std::make_shared<const T>(*std::move(obj));
      out.push_back(std::move(e));
    }
    if (out.empty() && ended_) return *ended_;
    return out;
  }

  void Close() override { stream_->Close(); }

 private:
  std::unique_ptr<HttpLineStream> stream_;
  std::optional<ApiError> ended_;  // returned once the events before it are handed out
};

template <class T>
class HttpResource final : public Resource<T> {
 public:
  explicit HttpResource(HttpTransport& t) : t_(t) {}

  ApiOr<T> Create(const T& obj, const WriteOptions& opts) override {
    std::string target = Collection(obj.metadata.namespace_);
    if (target.empty()) return NeedNamespace();
    AddWriteOptions(target, opts);
    return ObjectOf<T>(t_.Do("POST", target, "application/json", Body(obj)));
  }
  ApiOr<T> Get(std::string_view ns, std::string_view name) override {
    std::string target = Item(ns, name);
    if (target.empty()) return NeedNamespace();
    return ObjectOf<T>(t_.Do("GET", target, "", ""));
  }
  ApiOr<ObjectList<T>> List(std::string_view ns, const ListOptions& opts) override {
    std::string target = Collection(ns, /*all_namespaces=*/true);
    AddListOptions(target, opts);
    auto r = t_.Do("GET", target, "", "");
    if (!r.ok()) return FromTransport(r.status());
    if (r->status != 200) return FromResponse(*r);
    auto j = api::ParseJson(r->body);
    if (!j.ok() || !j->is_object()) {
      return ApiError{500, "InternalError", "the list does not parse", {}, {}, {}, {}};
    }
    ObjectList<T> out;
    const Json& items = (*j)["items"];
    if (items.is_array()) {
      out.items.reserve(items.size());
      for (const auto& item : items) {
        auto obj = DecodeObject<T>(item);
        if (!obj.ok()) return obj.error();
        out.items.push_back(*std::move(obj));
      }
    }
    const Json& meta = (*j)["metadata"];
    if (meta.is_object()) {
      out.resource_version = meta.value("resourceVersion", "");
      out.continue_token = meta.value("continue", "");
    }
    return out;
  }
  ApiOr<T> Update(const T& obj, const WriteOptions& opts) override { return Put(obj, "", opts); }
  ApiOr<T> UpdateStatus(const T& obj, const WriteOptions& opts) override {
    return Put(obj, "/status", opts);
  }
  // kvol's server writes an object and its status in one request (a PUT on the collection,
  // see UpdateMany); elsewhere (a 404 or 405 for it) this falls back to two, once and for all.
  bool writes_with_status() const override {
    return !batch_refused_.load(std::memory_order_relaxed);
  }
  ApiOr<T> UpdateWithStatus(const T& obj, const WriteOptions& opts) override {
    if (!batch_refused_.load(std::memory_order_relaxed)) {
      auto answers = UpdateMany({obj}, true, true, opts);
      if (answers) {
        auto& a = answers->front();
        if (!a.ok()) return a.error();
        return **a;
      }
    }
    auto first = Put(obj, "", opts);
    if (!first.ok()) return first;
    if constexpr (requires { obj.status; }) {
      T with_status = *std::move(first);
      with_status.status = obj.status;
      return Put(with_status, "/status", opts);
    }
    return first;
  }
  std::vector<ApiOr<std::shared_ptr<const T>>> UpdateSharedMany(std::vector<T> objs, bool main,
                                                                bool status,
                                                                const WriteOptions& opts) override {
    if (!batch_refused_.load(std::memory_order_relaxed)) {
      if (auto answers = UpdateMany(objs, main, status, opts)) return *std::move(answers);
    }
    return Resource<T>::UpdateSharedMany(std::move(objs), main, status, opts);
  }
  ApiOr<T> Patch(std::string_view ns, std::string_view name, PatchType type, std::string_view patch,
                 bool status) override {
    std::string target = Item(ns, name);
    if (target.empty()) return NeedNamespace();
    if (status) target += "/status";
    return ObjectOf<T>(t_.Do("PATCH", target, PatchContentType(type), std::string(patch)));
  }
  ApiOr<T> Delete(std::string_view ns, std::string_view name, const DeleteOptions& opts) override {
    std::string target = Item(ns, name);
    if (target.empty()) return NeedNamespace();
    Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
    if (opts.grace_period_seconds) body["gracePeriodSeconds"] = *opts.grace_period_seconds;
    if (!opts.propagation_policy.empty()) body["propagationPolicy"] = opts.propagation_policy;
    if (opts.dry_run) body["dryRun"] = Json::array({"All"});
    if (opts.precondition_uid || opts.precondition_resource_version) {
      Json pre = Json::object();
      if (opts.precondition_uid) pre["uid"] = *opts.precondition_uid;
      if (opts.precondition_resource_version) {
        pre["resourceVersion"] = *opts.precondition_resource_version;
      }
      body["preconditions"] = std::move(pre);
    }
    auto r = t_.Do("DELETE", target, "application/json", api::DumpJson(body));
    if (!r.ok()) return FromTransport(r.status());
    if (r->status < 200 || r->status >= 300) return FromResponse(*r);
    auto j = api::ParseJson(r->body);
    if (j.ok() && j->is_object() && j->value("kind", "") == "Status") {
      // Servers that answer a completed delete with a Success Status rather than the object.
      T gone;
      gone.metadata.name = std::string(name);
      if (api::KindInfoOf<T>().namespaced) gone.metadata.namespace_ = std::string(ns);
      return gone;
    }
    if (!j.ok())
      return ApiError{500, "InternalError", "the response does not parse", {}, {}, {}, {}};
    return DecodeObject<T>(*j);
  }
  ApiOr<std::unique_ptr<Watcher<T>>> Watch(std::string_view ns, const ListOptions& opts) override {
    std::string target = Collection(ns, /*all_namespaces=*/true);
    AddQuery(target, "watch", "1");
    AddListOptions(target, opts);
    if (opts.allow_bookmarks) AddQuery(target, "allowWatchBookmarks", "true");
    if (opts.timeout_seconds > 0) {
      AddQuery(target, "timeoutSeconds", std::to_string(opts.timeout_seconds));
    }
    int status = 0;
    std::string error_body;
    auto s = t_.Stream(target, &status, &error_body);
    if (!s.ok()) return FromTransport(s.status());
    if (status != 200) return FromResponse(HttpResponse{status, std::move(error_body)});
    return std::unique_ptr<Watcher<T>>(std::make_unique<HttpWatcher<T>>(std::move(*s)));
  }

 private:
  static const api::KindInfo& Kind() { return api::KindInfoOf<T>(); }

  // The collection's path; "" when a namespaced kind needs a namespace and has none.
  static std::string Collection(std::string_view ns, bool all_namespaces = false) {
    const auto& k = Kind();
    std::string p = k.group.empty()
                        ? "/api/" + std::string(k.version)
                        : "/apis/" + std::string(k.group) + "/" + std::string(k.version);
    if (k.namespaced) {
      if (ns.empty() && !all_namespaces) return "";
      if (!ns.empty()) p += "/namespaces/" + QueryEscape(ns);
    }
    p += '/';
    p += k.resource;
    return p;
  }
  static std::string Item(std::string_view ns, std::string_view name) {
    std::string p = Collection(ns);
    if (p.empty()) return p;
    return p + "/" + QueryEscape(name);
  }
  static std::string Body(const T& obj) {
    const auto& k = Kind();
    if (obj.api_version == k.ApiVersion() && obj.kind == k.kind) return api::EncodeJsonText(obj);
    T typed = obj;
    typed.api_version = k.ApiVersion();
    typed.kind = std::string(k.kind);
    return api::EncodeJsonText(typed);
  }
  static ApiError NeedNamespace() {
    return ApiError{
        400, "BadRequest", "a namespace is required for " + std::string(Kind().resource),
        {},  {},           {},
        {}};
  }

  // Updates of several objects through kvol's PUT on their collection, at most about
  // kMaxBatchBytes of objects to a request; nullopt when the server does not take such a PUT
  // (and then batch_refused_ is set: the caller writes them one by one).
  std::optional<std::vector<ApiOr<std::shared_ptr<const T>>>> UpdateMany(const std::vector<T>& objs,
                                                                         bool main, bool status,
                                                                         const WriteOptions& opts) {
    constexpr size_t kMaxBatchBytes = 1 << 20;
    std::vector<ApiOr<std::shared_ptr<const T>>> out;
    out.reserve(objs.size());
    size_t next = 0;
    while (next < objs.size()) {
      // One namespace to a request (its path's), as Kubernetes' paths have it.
      const std::string& ns = objs[next].metadata.namespace_;
      std::string target = Collection(ns);
      if (target.empty()) return std::nullopt;  // a namespaced kind with none: item by item
      AddQuery(target, "write", !status ? "object" : main ? "object,status" : "status");
      AddWriteOptions(target, opts);
      std::string body = "{\"apiVersion\":\"" + Kind().ApiVersion() + "\",\"kind\":\"" +
                         std::string(Kind().kind) + "List\",\"items\":[";
      const size_t first = next;
      while (next < objs.size() && objs[next].metadata.namespace_ == ns &&
             (next == first || body.size() < kMaxBatchBytes)) {
        if (next > first) body += ',';
        body += Body(objs[next]);
        ++next;
      }
      body += "]}";
      auto r = t_.Do("PUT", target, "application/json", std::move(body));
      if (r.ok() && (r->status == 404 || r->status == 405) && first == 0) {
        batch_refused_.store(true, std::memory_order_relaxed);
        return std::nullopt;
      }
      AnswersOf(r, next - first, out);
    }
    return out;
  }

  // The `count` answers of one PUT on a collection, appended to `out`.
  static void AnswersOf(const StatusOr<HttpResponse>& r, size_t count,
                        std::vector<ApiOr<std::shared_ptr<const T>>>& out) {
    auto all = [&](ApiError e) {
      for (size_t i = 0; i < count; ++i) out.push_back(e);
    };
    if (!r.ok()) return all(FromTransport(r.status()));
    if (r->status < 200 || r->status >= 300) return all(FromResponse(*r));
    auto bad = [&](const std::string& why) {
      all(ApiError{500, "InternalError", "the answer to a list of updates " + why, {}, {}, {}, {}});
    };
    TextWritten<T> fast;
    // A Status would decode as a kind with no fields of its own: the kind tells them apart.
    if (api::DecodeJsonText(r->body, fast) &&
        std::all_of(fast.items.begin(), fast.items.end(),
                    [](const T& item) { return item.kind == Kind().kind; })) {
      if (fast.items.size() != count) return bad("has the wrong number of items");
      for (auto& item : fast.items) out.push_back(std::make_shared<const T>(std::move(item)));
      return;
    }
    auto j = api::ParseJson(r->body);
    if (!j.ok() || !j->is_object()) return bad("does not parse");
    const Json& items = (*j)["items"];
    if (!items.is_array() || items.size() != count) return bad("has the wrong number of items");
    for (const Json& item : items) {
      if (item.is_object() && item.value("kind", "") == "Status") {
        out.push_back(ApiError::FromStatusJson(item, 500));
        continue;
      }
      auto obj = DecodeObject<T>(item);
      if (!obj.ok()) {
        out.push_back(obj.error());
      } else {
        out.push_back(std::make_shared<const T>(*std::move(obj)));
      }
    }
  }

  ApiOr<T> Put(const T& obj, std::string_view sub, const WriteOptions& opts) {
    std::string target = Item(obj.metadata.namespace_, obj.metadata.name);
    if (target.empty()) return NeedNamespace();
    target += sub;
    AddWriteOptions(target, opts);
    return ObjectOf<T>(t_.Do("PUT", target, "application/json", Body(obj)));
  }

  HttpTransport& t_;
  std::atomic<bool> batch_refused_{false};
};

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The entry called `name` in a kubeconfig list ("clusters", "users", "contexts"), or null.
const Json* Named(const Json& cfg, const char* list, const std::string& name, const char* field) {
  auto it = cfg.find(list);
  if (it == cfg.end() || !it->is_array()) return nullptr;
  for (const auto& e : *it) {
    if (e.is_object() && e.value("name", "") == name) {
      auto f = e.find(field);
      return f != e.end() && f->is_object() ? &*f : nullptr;
    }
  }
  return nullptr;
}

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

StatusOr<HttpConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto r = manifest::ParseText(*text, path);
  if (!r.errors.empty()) return InvalidArgumentError(r.errors.front().ToString());
  if (r.documents.empty() || !r.documents.front().object.is_object()) {
    return InvalidArgumentError(path + ": not a kubeconfig");
  }
  const Json& cfg = r.documents.front().object;
  std::string ctx_name = context.empty() ? Str(cfg, "current-context") : std::string(context);
  if (ctx_name.empty()) return InvalidArgumentError(path + ": no current-context");
  const Json* ctx = Named(cfg, "contexts", ctx_name, "context");
  if (!ctx) return InvalidArgumentError(path + ": context \"" + ctx_name + "\" not found");
  const std::string cluster_name = Str(*ctx, "cluster");
  const Json* cluster = Named(cfg, "clusters", cluster_name, "cluster");
  if (!cluster) return InvalidArgumentError(path + ": cluster \"" + cluster_name + "\" not found");

  HttpConfig c;
  c.server = Str(*cluster, "server");
  if (c.server.empty())
    return InvalidArgumentError(path + ": cluster \"" + cluster_name + "\" has no server");
  if (std::string ns = Str(*ctx, "namespace"); !ns.empty()) c.default_namespace = ns;
  if (auto it = cluster->find("insecure-skip-tls-verify");
      it != cluster->end() && it->is_boolean()) {
    c.insecure_skip_tls_verify = it->get<bool>();
  }
  if (std::string data = Str(*cluster, "certificate-authority-data"); !data.empty()) {
    auto pem = Base64Decode(data);
    if (!pem) return InvalidArgumentError(path + ": certificate-authority-data is not base64");
    c.ca_pem = *std::move(pem);
  } else if (std::string file = Str(*cluster, "certificate-authority"); !file.empty()) {
    if (file.front() != '/') {
      const size_t slash = path.rfind('/');
      if (slash != std::string::npos) file = path.substr(0, slash + 1) + file;
    }
    auto pem = ReadFile(file);
    if (!pem.ok()) return pem.status();
    c.ca_pem = *std::move(pem);
  }

  const std::string user_name = Str(*ctx, "user");
  if (user_name.empty()) return c;
  const Json* user = Named(cfg, "users", user_name, "user");
  if (!user) return InvalidArgumentError(path + ": user \"" + user_name + "\" not found");
  c.token = Str(*user, "token");
  if (c.token.empty()) {
    if (std::string file = Str(*user, "tokenFile"); !file.empty()) {
      auto token = ReadFile(file);
      if (!token.ok()) return token.status();
      c.token = *std::move(token);
      while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) {
        c.token.pop_back();
      }
    }
  }
  if (c.token.empty()) {
    for (const char* unsupported :
         {"client-certificate", "client-certificate-data", "exec", "auth-provider", "username"}) {
      if (user->contains(unsupported)) {
        return UnimplementedError(path + ": user \"" + user_name + "\" authenticates with " +
                                  unsupported +
                                  ", which kvol's client does not support; use a "
                                  "bearer token");
      }
    }
  }
  return c;
}

HttpClient::HttpClient(std::unique_ptr<HttpTransport> transport)
    : transport_(std::move(transport)) {
  Emplace<HttpResource>(*transport_);
}

HttpClient::~HttpClient() = default;

std::optional<ApiError> HttpClient::BindPod(const api::Binding& binding) {
  if (binding.metadata.namespace_.empty()) {
    return ApiError{400, "BadRequest", "a Binding needs the pod's namespace", {}, {}, {}, {}};
  }
  api::Binding typed = binding;
  typed.api_version = "v1";
  typed.kind = "Binding";
  const std::string target = "/api/v1/namespaces/" + QueryEscape(binding.metadata.namespace_) +
                             "/pods/" + QueryEscape(binding.metadata.name) + "/binding";
  auto r = transport_->Do("POST", target, "application/json", api::EncodeJsonText(typed));
  if (!r.ok()) return FromTransport(r.status());
  if (r->status < 200 || r->status >= 300) return FromResponse(*r);
  return std::nullopt;
}

ApiOr<api::Namespace> HttpClient::FinalizeNamespace(const api::Namespace& ns) {
  api::Namespace typed = ns;
  typed.api_version = "v1";
  typed.kind = "Namespace";
  const std::string target = "/api/v1/namespaces/" + QueryEscape(ns.metadata.name) + "/finalize";
  return ObjectOf<api::Namespace>(
      transport_->Do("PUT", target, "application/json", api::EncodeJsonText(typed)));
}

ApiOr<api::authentication::TokenRequest> HttpClient::CreateToken(std::string_view ns, std::string_view name,
                                                 const api::authentication::TokenRequest& request) {
  api::authentication::TokenRequest typed = request;
  typed.api_version = api::authentication::kAuthenticationApiVersion;
  typed.kind = "TokenRequest";
  const std::string target = "/api/v1/namespaces/" + QueryEscape(ns) + "/serviceaccounts/" +
                             QueryEscape(name) + "/token";
  return ObjectOf<api::authentication::TokenRequest>(
      transport_->Do("POST", target, "application/json", api::EncodeJsonText(typed)));
}

StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(HttpConfig config) {
  auto t = HttpTransport::Create(std::move(config));
  if (!t.ok()) return t.status();
  return std::unique_ptr<HttpClient>(new HttpClient(*std::move(t)));
}

const HttpConfig& HttpClient::config() const { return transport_->config(); }

}  // namespace kvol::client
