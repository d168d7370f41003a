// Routing and verbs of the HTTP API.
#include "apiserver/rest.h"

#include <algorithm>
#include <chrono>

#include "api/protobuf.h"
#include "apiserver/authentication.h"
#include "apiserver/binding.h"
#include "apiserver/namespace_finalize.h"
#include "apiserver/discovery.h"
#include "apiserver/node_client.h"
#include "apiserver/openapi.h"
#include "apiserver/request_info.h"
#include "apiserver/request_metrics.h"
#include "apiserver/streaming.h"
#include "apiserver/tables.h"
#include "apiserver/watch_response.h"
#include "base/strings.h"
#include "manifest/manifest.h"
#include "metrics/metrics.h"
#include "ui/assets.h"

namespace kvol::apiserver {

using api::Json;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kJson = "application/json";

void SendJson(ResponseWriter& w, int code, const std::string& body,
              const std::vector<std::string>& warnings = {}) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& m : warnings) {
    std::string quoted;
    for (char c : m) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    headers.emplace_back("Warning", "299 - \"" + quoted + "\"");
  }
  w.Send(code, kJson, body, headers);
}

bool WantsTable(const HttpRequest& req) {
  std::string accept = req.Header("accept");
  return accept.find("as=Table") != std::string::npos;
}

std::string IncludeObject(const HttpRequest& req) {
  std::string v = req.Query("includeObject");
  return v.empty() ? "Metadata" : v;
}

ListOptions ListOptionsOf(const HttpRequest& req) {
  ListOptions o;
  o.label_selector = req.Query("labelSelector");
  o.field_selector = req.Query("fieldSelector");
  o.resource_version = req.Query("resourceVersion");
  o.resource_version_match = req.Query("resourceVersionMatch");
  int64_t v = 0;
  if (ParseInt64(req.Query("limit"), &v) && v > 0) o.limit = v;
  o.continue_token = req.Query("continue");
  o.allow_bookmarks = QueryTrue(req.Query("allowWatchBookmarks"));
  if (ParseInt64(req.Query("timeoutSeconds"), &v) && v > 0) o.timeout_seconds = v;
  return o;
}

WriteOptions WriteOptionsOf(const HttpRequest& req) {
  WriteOptions o;
  o.dry_run = req.Query("dryRun") == "All";
  o.field_validation = req.Query("fieldValidation");
  return o;
}

// The format of a create or update body, from its Content-Type: its media type, parameters
// (charset) ignored and case folded, as Go's mime.ParseMediaType reads it. A request without
// one is JSON, the first type Kubernetes lists; any other type is refused in its words.
enum class BodyFormat { kJson, kYaml, kProtobuf };

ApiOr<BodyFormat> BodyFormatOf(const HttpRequest& req) {
  const std::string content_type = req.Header("content-type");
  std::string_view header = content_type;
  header = header.substr(0, header.find(';'));
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!header.empty() && blank(header.front())) header.remove_prefix(1);
  while (!header.empty() && blank(header.back())) header.remove_suffix(1);
  std::string type(header);
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type.empty() || type == "application/json") return BodyFormat::kJson;
  if (type == "application/yaml") return BodyFormat::kYaml;
  if (type == api::kProtobufContentType) return BodyFormat::kProtobuf;
  return UnsupportedMediaType(
      "the body of the request was in an unknown format - accepted media types include: "
      "application/json, application/yaml, application/vnd.kubernetes.protobuf");
}

ApiOr<Json> ParseBody(const HttpRequest& req) {
  if (req.body.empty()) return BadRequest("the request body is empty");
  auto format = BodyFormatOf(req);
  if (!format.ok()) return format.error();
  if (*format == BodyFormat::kYaml) {
    manifest::ReadResult read = manifest::ParseText(req.body, "body");
    if (!read.errors.empty()) {
      return BadRequest("error decoding the request body: " + read.errors.front().ToString());
    }
    if (read.documents.size() != 1) {
      return BadRequest("error decoding the request body: expected one YAML document, got " +
                        std::to_string(read.documents.size()));
    }
    return std::move(read.documents.front().object);
  }
  if (*format == BodyFormat::kProtobuf) {
    auto j = api::DecodeProtobufObject(req.body);
    if (!j.ok()) {
      if (j.status().code() == StatusCode::kUnimplemented) {
        return UnsupportedMediaType(j.status().message());
      }
      return BadRequest(j.status().message());
    }
    return *std::move(j);
  }
  auto j = api::ParseJson(req.body);
  if (!j.ok()) return BadRequest("error decoding the request body: " + j.status().message());
  return *std::move(j);
}

// A non-empty JSON body, for the Resource's text entry points.
bool IsJsonBody(const HttpRequest& req) {
  auto format = BodyFormatOf(req);
  return !req.body.empty() && format.ok() && *format == BodyFormat::kJson;
}

std::string ListJson(const api::KindInfo& k, const ListOut& l) {
  std::string out = "{\"apiVersion\":\"" + k.ApiVersion() + "\",\"items\":[";
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out += ',';
    out += l.items[i].Json();
  }
  out += "],\"kind\":\"" + std::string(k.kind) + "List\",\"metadata\":{";
  if (!l.continue_token.empty()) out += "\"continue\":\"" + l.continue_token + "\",";
  if (l.remaining) out += "\"remainingItemCount\":" + std::to_string(*l.remaining) + ",";
  out += "\"resourceVersion\":\"" + std::to_string(l.rev) + "\"}}";
  return out;
}

ApiOr<DeleteOptions> DeleteOptionsOf(const HttpRequest& req) {
  DeleteOptions o;
  o.dry_run = req.Query("dryRun") == "All";
  o.propagation_policy = req.Query("propagationPolicy");
  int64_t g;
  if (ParseInt64(req.Query("gracePeriodSeconds"), &g)) o.grace_period_seconds = g;
  if (!req.body.empty()) {
    auto j = ParseBody(req);  // JSON, YAML or protobuf, as the Content-Type says
    if (!j.ok() && j.error().code == 415) return j.error();
    if (!j.ok() || !j->is_object()) return BadRequest("the body must be a DeleteOptions object");
    if (j->contains("orphanDependents") && (*j)["orphanDependents"].is_boolean()) {
      o.propagation_policy = (*j)["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    }
    if (j->contains("propagationPolicy") && (*j)["propagationPolicy"].is_string()) {
      o.propagation_policy = (*j)["propagationPolicy"];
    }
    if (j->contains("gracePeriodSeconds") && (*j)["gracePeriodSeconds"].is_number_integer()) {
      o.grace_period_seconds = (*j)["gracePeriodSeconds"].get<int64_t>();
    }
    if (j->contains("dryRun") && (*j)["dryRun"].is_array() && !(*j)["dryRun"].empty()) {
      o.dry_run = true;
    }
    const Json& pre = (*j).value("preconditions", Json::object());
    if (pre.is_object()) {
      if (pre.contains("uid") && pre["uid"].is_string()) o.precondition_uid = pre["uid"];
      if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string()) {
        o.precondition_resource_version = pre["resourceVersion"];
      }
    }
  }
  // The garbage collector acts on Orphan and Foreground (the finalizers the delete adds).
  const auto& p = o.propagation_policy;
  if (!p.empty() && p != "Foreground" && p != "Background" && p != "Orphan") {
    static const api::KindInfo kDeleteOptions{"meta.k8s.io", "v1", "DeleteOptions", "", "", {}};
    return Invalid(kDeleteOptions, "",
                   {api::NotSupported(api::Path("propagationPolicy"), p,
                                      {"Foreground", "Background", "Orphan"})});
  }
  return o;
}

}  // namespace

RestHandler::RestHandler(Api& api, RestOptions opts) : api_(api), opts_(std::move(opts)) {}

void RestHandler::Handle(const HttpRequest& req, ResponseWriter& w) {
  const std::string& path = req.path;
  if (path == "/healthz" || path == "/livez" || path == "/readyz" ||
      path.rfind("/healthz/", 0) == 0 || path.rfind("/livez/", 0) == 0 ||
      path.rfind("/readyz/", 0) == 0) {
    w.Send(200, "text/plain; charset=utf-8", "ok");
    return;
  }
  if (path == "/version" || path == "/version/") {
    SendJson(w, 200, api::DumpJson(VersionInfo()));
    return;
  }
  if (path == "/ui" || path.rfind("/ui/", 0) == 0) {
    ServeUi(req, w);
    return;
  }
  auto who = AuthenticateRequest(req, opts_.token, api_.service_account_tokens());
  if (!who) {
    SendError(w, Unauthorized());
    return;
  }
  w.Authenticated();
  const auto start = std::chrono::steady_clock::now();
  StatusRecorder recorder(w);
  const std::vector<std::string> parts = PathParts(path);
  if (auto denied = Authorize(*who, req, parts)) {
    SendError(recorder, *denied);
  } else {
    HandleAuthenticated(req, recorder, parts, *who);
  }
  ObserveRequest(RequestInfoOf(req, parts), recorder.status(),
                 std::chrono::steady_clock::now() - start);
}

void RestHandler::ServeUi(const HttpRequest& req, ResponseWriter& w) {
  // The page's files hold no cluster data: they are served to anyone, as a login page is. What
  // the page shows it reads from the API, with the token (kubectl proxy adds it).
  if (req.method != "GET" && req.method != "HEAD") return SendError(w, MethodNotAllowed());
  if (req.path == "/ui") {
    w.Send(301, "text/plain; charset=utf-8", "", {{"Location", "/ui/"}});
    return;
  }
  const ui::Asset* asset = ui::FindAsset(std::string_view(req.path).substr(4));
  if (!asset) {
    return SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
  }
  w.Send(200, asset->content_type, asset->body,
         {{"Cache-Control", "no-cache"},
          {"X-Content-Type-Options", "nosniff"},
          {"Content-Security-Policy", std::string(ui::kContentSecurityPolicy)}});
}

void RestHandler::HandleAuthenticated(const HttpRequest& req, ResponseWriter& w,
                                      const std::vector<std::string>& parts,
                                      const Authenticated& who) {
  const std::string& path = req.path;
  if (IsReviewPath(parts)) {
    if (req.method != "POST") return SendError(w, MethodNotAllowed());
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(w, body.error());
    auto answer = Review(opts_.token, api_.service_account_tokens(), who, parts, *body);
    if (!answer.ok()) return SendError(w, answer.error());
    return SendJson(w, 201, *answer);
  }
  if (path == "/metrics") {
    if (req.method != "GET") return SendError(w, MethodNotAllowed());
    w.Send(200, metrics::kContentType, metrics::Expose());
    return;
  }
  if (path == api::kUpdateTogetherPath) return UpdateTogether(req, w);
  if (req.method == "GET" && ServeDiscovery(req, w, parts)) return;
  HandlePath(req, w, parts);
}

bool RestHandler::ServeDiscovery(const HttpRequest& req, ResponseWriter& w,
                                 const std::vector<std::string>& parts) {
  const std::string& path = req.path;
  if (parts.size() == 1 && parts[0] == "api") {
    SendJson(w, 200, api::DumpJson(ApiVersions(opts_.server_address)));
    return true;
  }
  if (parts.size() == 1 && parts[0] == "apis") {
    SendJson(w, 200, api::DumpJson(ApiGroupList()));
    return true;
  }
  if (parts.size() == 2 && parts[0] == "apis") {
    if (auto g = ApiGroup(parts[1])) {
      SendJson(w, 200, api::DumpJson(*g));
      return true;
    }
  }
  if ((parts.size() == 2 && parts[0] == "api") || (parts.size() == 3 && parts[0] == "apis")) {
    auto list =
        parts[0] == "api" ? ApiResourceList("", parts[1]) : ApiResourceList(parts[1], parts[2]);
    if (list) {
      SendJson(w, 200, api::DumpJson(*list));
      return true;
    }
  }
  if (!parts.empty() && parts[0] == "openapi") {
    std::string rest = path.substr(std::string("/openapi").size());
    const std::string accept = req.Header("accept");
    if ((rest == "/v2" || rest == "/v2/") && !accept.empty() &&
        accept.find("json") == std::string::npos && accept.find("*/*") == std::string::npos) {
      if (accept.find(kOpenApiV2ProtobufAsked) == std::string::npos &&
          accept.find(kOpenApiV2Protobuf) == std::string::npos) {
        SendError(w, NotAcceptable("/openapi/v2 is served as application/json and " +
                                   std::string(kOpenApiV2Protobuf)));
        return true;
      }
      w.Send(200, kOpenApiV2Protobuf, OpenApiV2Protobuf(), {});
      return true;
    }
    auto doc = OpenApiDocument(rest);
    if (doc) {
      SendJson(w, 200, *doc);
      return true;
    }
  }
  return false;
}

void RestHandler::HandlePath(const HttpRequest& req, ResponseWriter& w,
                             const std::vector<std::string>& parts) {
  // Resource paths: /api/v1/... or /apis/<group>/<version>/...
  std::string group, version;
  size_t i = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    i = 3;
  } else {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  std::string ns;
  // namespaces/<ns>/<resource>... (but namespaces/<name>[/status] is the Namespace itself)
  const bool namespace_subresource = group.empty() && parts.size() == i + 3 &&
                                     (parts[i + 2] == "status" || parts[i + 2] == "finalize");
  if (parts.size() >= i + 3 && parts[i] == "namespaces" && !namespace_subresource) {
    ns = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size()) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  Resource* res = api_.Find(group, version, parts[i]);
  if (res == nullptr) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  std::string name = parts.size() > i + 1 ? parts[i + 1] : "";
  std::string sub = parts.size() > i + 2 ? parts[i + 2] : "";
  if (sub == "proxy" && &res->info() == &api::KindInfoOf<api::Node>()) {
    std::string rest;
    for (size_t p = i + 3; p < parts.size(); ++p) rest += "/" + parts[p];
    return NodeProxy(req, w, name, rest.empty() ? "/" : rest);
  }
  if (parts.size() > i + 3) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  const bool cluster_list = res->info().namespaced && ns.empty();
  if (!res->info().namespaced && !ns.empty()) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  if (cluster_list && !name.empty()) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  const bool pods = &res->info() == &api::KindInfoOf<api::Pod>();
  const bool binding = sub == "binding" && pods;
  if (sub == "log" && pods && !name.empty() && !ns.empty()) {
    if (req.method != "GET") return SendError(w, MethodNotAllowed());
    return PodLog(req, w, ns, name);
  }
  if (sub == "exec" && pods && !name.empty() && !ns.empty()) {
    if (req.method != "GET" && req.method != "POST") return SendError(w, MethodNotAllowed());
    return PodExec(req, w, ns, name);
  }
  if (sub == "finalize" && &res->info() == &api::KindInfoOf<api::Namespace>() &&
      !name.empty()) {
    if (req.method != "PUT") return SendError(w, MethodNotAllowed());
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(w, body.error());
    api::FieldErrors errs;
    auto finalized = api::DecodeStruct<api::Namespace>(*body, &errs);
    if (!errs.empty()) {
      return SendError(w, BadRequest("Namespace: " + api::AggregateMessage(errs)));
    }
    auto written = FinalizeNamespace(api_.registry<api::Namespace>(), name, finalized);
    if (!written.ok()) return SendError(w, written.error());
    return SendJson(w, 200, api::EncodeJsonText(*written));
  }
  if (sub == "token" && &res->info() == &api::KindInfoOf<api::ServiceAccount>() &&
      !name.empty() && !ns.empty()) {
    if (req.method != "POST") return SendError(w, MethodNotAllowed());
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(w, body.error());
    auto answer = CreateToken(api_.service_account_tokens(), ns, name, *body);
    if (!answer.ok()) return SendError(w, answer.error());
    return SendJson(w, 201, *answer);
  }
  if (!sub.empty() && !(sub == "status" && res->has_status()) && !binding) {
    SendError(w, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  HandleResource(req, w, *res, ns, name, sub, cluster_list);
}

void RestHandler::HandleResource(const HttpRequest& req, ResponseWriter& w, Resource& res,
                                 const std::string& ns, const std::string& name,
                                 const std::string& sub, bool cluster_list) {
  const auto& k = res.info();
  const bool table = WantsTable(req);
  const bool status = sub == "status";
  auto respond_object = [&](const ApiOr<StoredObject>& r, int code) {
    if (!r.ok()) return SendError(w, r.error());
    if (table && req.method == "GET") {
      auto j = res.Decode(*r);
      if (!j.ok()) return SendError(w, j.error());
      Json t = MakeTable(k.kind, {*j}, std::to_string(r->rev), "", IncludeObject(req),
                         api_.clock().Now(), true);
      return SendJson(w, 200, api::DumpJson(t));
    }
    SendJson(w, code, r->Json(), r->warnings);
  };

  if (name.empty()) {
    if (req.method == "GET") {
      ListOptions lo = ListOptionsOf(req);
      if (QueryTrue(req.Query("watch"))) return Watch(req, w, res, ns, lo, table);
      auto l = res.ListStored(ns, lo);
      if (!l.ok()) return SendError(w, l.error());
      if (table) {
        std::vector<Json> objs;
        objs.reserve(l->items.size());
        for (const auto& it : l->items) {
          auto j = res.Decode(it);
          if (!j.ok()) return SendError(w, j.error());
          objs.push_back(*std::move(j));
        }
        Json t = MakeTable(k.kind, objs, std::to_string(l->rev), l->continue_token,
                           IncludeObject(req), api_.clock().Now(), true);
        return SendJson(w, 200, api::DumpJson(t));
      }
      return SendJson(w, 200, ListJson(k, *l));
    }
    if (req.method == "POST" && !cluster_list) {
      if (IsJsonBody(req)) {
        return respond_object(res.CreateJsonText(ns, req.body, WriteOptionsOf(req)), 201);
      }
      auto body = ParseBody(req);
      if (!body.ok()) return SendError(w, body.error());
      return respond_object(res.CreateJson(ns, *body, WriteOptionsOf(req)), 201);
    }
    if (req.method == "PUT") return UpdateMany(req, w, res, ns);
    if (req.method == "DELETE" && !cluster_list) {
      auto dopts = DeleteOptionsOf(req);
      if (!dopts.ok()) return SendError(w, dopts.error());
      auto l = res.ListStored(ns, ListOptionsOf(req));
      if (!l.ok()) return SendError(w, l.error());
      ListOut deleted;
      deleted.rev = l->rev;
      for (const auto& item : l->items) {
        auto obj = res.Decode(item);
        if (!obj.ok()) return SendError(w, obj.error());
        const api::Json& meta = (*obj)["metadata"];
        auto d = res.DeleteStored(meta.value("namespace", ns), meta.value("name", ""), *dopts);
        if (d.ok()) {
          deleted.items.push_back(*d);
        } else if (!api::IsNotFound(d.error())) {  // gone meanwhile: nothing left to delete
          return SendError(w, d.error());
        }
      }
      return SendJson(w, 200, ListJson(k, deleted));
    }
    return SendError(w, MethodNotAllowed());
  }

  if (sub == "binding") {
    if (req.method != "POST") return SendError(w, MethodNotAllowed());
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(w, body.error());
    api::FieldErrors errs;
    auto b = api::DecodeStruct<api::Binding>(*body, &errs);
    if (!errs.empty()) return SendError(w, BadRequest("Binding: " + api::AggregateMessage(errs)));
    auto bound = BindPod(api_.registry<api::Pod>(), ns, name, b,
                         api::Time::FromTimePoint(api_.clock().Now()));
    if (!bound.ok()) return SendError(w, bound.error());
    return SendJson(
        w, 201,
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  }
  if (req.method == "GET") return respond_object(res.GetStored(ns, name), 200);
  if (req.method == "PUT") {
    if (IsJsonBody(req)) {
      return respond_object(res.UpdateJsonText(ns, name, req.body, status, WriteOptionsOf(req)),
                            200);
    }
    auto body = ParseBody(req);
    if (!body.ok()) return SendError(w, body.error());
    return respond_object(res.UpdateJson(ns, name, *body, status, WriteOptionsOf(req)), 200);
  }
  if (req.method == "PATCH") {
    if (req.body.empty()) return SendError(w, BadRequest("the patch is empty"));
    return respond_object(
        res.PatchJson(ns, name, req.Header("content-type"), req.body, status, WriteOptionsOf(req)),
        200);
  }
  if (req.method == "DELETE" && !status) {
    auto dopts = DeleteOptionsOf(req);
    if (!dopts.ok()) return SendError(w, dopts.error());
    return respond_object(res.DeleteStored(ns, name, *dopts), 200);
  }
  SendError(w, MethodNotAllowed());
}

// kvol's extension for its own controllers, which Kubernetes answers 405: a PUT on a
// collection with a `<Kind>List` body updates each item as a PUT of it would (`?write=status`:
// as a PUT of its status; `?write=object,status`: both in one write), commits the writes
// together, and answers a `List` whose items are, in order, each object written or the
// `Status` of its failure. One request and one commit for a batch of bindings instead of four
// requests for each.
void RestHandler::UpdateMany(const HttpRequest& req, ResponseWriter& w, Resource& res,
                             const std::string& ns) {
  const std::string parts = req.Query("write");
  bool main = true, status = false;
  if (parts == "status") {
    main = false;
    status = true;
  } else if (parts == "object,status" || parts == "status,object") {
    status = true;
  } else if (!parts.empty() && parts != "object") {
    return SendError(w, BadRequest("write: Unsupported value: \"" + parts +
                                   "\": supported values: \"object\", \"status\", "
                                   "\"object,status\""));
  }
  if (!main && !res.has_status()) {
    return SendError(
        w, BadRequest("write: Invalid value: \"" + parts +
                      "\": " + std::string(res.info().resource) + " have no status subresource"));
  }
  if (req.body.empty()) return SendError(w, BadRequest("the request body is empty"));
  if (!IsJsonBody(req)) {
    return SendError(w, UnsupportedMediaType("a list of updates is JSON only"));
  }
  auto answers = res.UpdateManyJsonText(ns, req.body, main, status, WriteOptionsOf(req));
  if (!answers.ok()) return SendError(w, answers.error());
  std::string body = R"({"kind":"List","apiVersion":"v1","metadata":{},"items":[)";
  std::vector<std::string> warnings;
  for (size_t i = 0; i < answers->size(); ++i) {
    if (i) body += ',';
    const auto& a = (*answers)[i];
    if (!a.ok()) {
      body += a.error().ToJson();
      continue;
    }
    body += a->Json();
    for (const auto& m : a->warnings) {
      if (std::find(warnings.begin(), warnings.end(), m) == warnings.end()) warnings.push_back(m);
    }
  }
  body += "]}";
  SendJson(w, 200, body, warnings);
}

// kvol's write of several objects of any kinds (api/object_update.h), made with one commit by
// Api::UpdateTogether. A body that does not decode is refused whole, naming the field.
void RestHandler::UpdateTogether(const HttpRequest& req, ResponseWriter& w) {
  if (req.method != "POST") return SendError(w, MethodNotAllowed());
  if (!IsJsonBody(req)) return SendError(w, UnsupportedMediaType("updates are JSON only"));
  auto body = api::ParseJson(req.body);
  if (!body.ok())
    return SendError(w, BadRequest("the request body does not parse: " + body.status().message()));
  const api::Json* items =
      body->is_object() && body->contains("updates") ? &(*body)["updates"] : nullptr;
  if (!items || !items->is_array()) return SendError(w, BadRequest("updates: Required value"));
  std::vector<api::ObjectUpdate> updates;
  updates.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const api::Json& item = (*items)[i];
    const std::string field = "updates[" + std::to_string(i) + "]";
    if (!item.is_object() || !item.contains("object") || !item["object"].is_object()) {
      return SendError(w, BadRequest(field + ".object: Required value"));
    }
    const api::Json& obj = item["object"];
    const api::KindInfo* kind = api::FindKind(obj.value("apiVersion", ""), obj.value("kind", ""));
    Resource* res = kind ? api_.Find(kind->group, kind->version, kind->resource) : nullptr;
    if (!res) {
      return SendError(w, BadRequest(field + ".object: no kind \"" + obj.value("kind", "") +
                                     "\" in \"" + obj.value("apiVersion", "") + "\" is served"));
    }
    auto decoded = res->DecodeAny(obj);
    if (!decoded.ok())
      return SendError(w, BadRequest(field + ".object: " + decoded.error().message));
    api::ObjectUpdate u{*std::move(decoded)};
    u.main = item.value("main", true);
    u.status = item.value("status", false);
    u.after = item.value("after", -1);
    if (u.status && !res->has_status()) {
      return SendError(w, BadRequest(field + ".status: Invalid value: true: " +
                                     std::string(kind->resource) + " have no status subresource"));
    }
    updates.push_back(std::move(u));
  }
  std::string out = R"({"results":[)";
  bool first = true;
  for (const auto& a : api_.UpdateTogether(std::move(updates))) {
    out += first ? "{" : ",{";
    first = false;
    if (!a.ok()) {
      out += "\"status\":" + a.error().ToJson() + "}";
      continue;
    }
    out +=
        "\"object\":" + std::visit([](const auto& obj) { return api::EncodeJsonText(*obj); }, *a) +
        "}";
  }
  out += "]}";
  SendJson(w, 200, out);
}

ApiOr<RestHandler::PodNode> RestHandler::PodOnNode(const std::string& ns, const std::string& name,
                                                   std::string& container) {
  auto pod = api_.registry<api::Pod>().Get(ns, name);
  if (!pod.ok()) return pod.error();
  const auto& spec = pod->spec;
  auto names = [](const std::vector<api::Container>& cs) {
    std::string out;
    for (const auto& c : cs) out += (out.empty() ? "" : " ") + c.name;
    return out;
  };
  if (container.empty()) {
    auto annotated = pod->metadata.annotations.find("kubectl.kubernetes.io/default-container");
    if (annotated != pod->metadata.annotations.end()) {
      container = annotated->second;
    } else if (spec.containers.size() == 1) {
      container = spec.containers[0].name;
    } else {
      std::string message = "a container name must be specified for pod " + name +
                            ", choose one of: [" + names(spec.containers) + "]";
      if (!spec.init_containers.empty()) {
        message += " or one of the init containers: [" + names(spec.init_containers) + "]";
      }
      return BadRequest(message);
    }
  }
  auto is = [&](const api::Container& c) { return c.name == container; };
  if (std::none_of(spec.containers.begin(), spec.containers.end(), is) &&
      std::none_of(spec.init_containers.begin(), spec.init_containers.end(), is)) {
    return BadRequest("container " + container + " is not valid for pod " + name);
  }
  if (spec.node_name.empty()) return BadRequest("pod " + name + " does not have a host assigned");
  auto link = LinkTo(spec.node_name);
  if (!link.ok()) {
    if (link.error().code == 404) {
      return Unavailable("node \"" + spec.node_name + "\" of pod " + name + " does not exist");
    }
    return link.error();
  }
  PodNode out;
  out.node = link->node;
  out.remote = std::move(link->remote);
  out.pod = *std::move(pod);
  return out;
}

ApiOr<RestHandler::NodeLink> RestHandler::LinkTo(const std::string& node_name) {
  NodeLink out;
  out.node = opts_.nodes ? opts_.nodes->Find(node_name) : nullptr;
  if (out.node) return out;
  // An agent elsewhere: dialled at the endpoint its Node publishes.
  auto node = api_.registry<api::Node>().Get("", node_name);
  if (!node.ok()) return node.error();
  auto endpoint = NodeEndpointOf(*node);
  if (!endpoint.ok()) return endpoint.error();
  out.remote = std::make_unique<RemoteNodeConnection>(*std::move(endpoint), opts_.token);
  out.node = out.remote.get();
  return out;
}

void RestHandler::NodeProxy(const HttpRequest& req, ResponseWriter& w, const std::string& node,
                            const std::string& path) {
  if (req.method != "GET") return SendError(w, MethodNotAllowed());
  auto link = LinkTo(node);
  if (!link.ok()) return SendError(w, link.error());
  auto got = link->node->Get(path);
  if (!got.ok()) return SendError(w, got.error());
  w.Send(got->code, got->content_type, got->body);
}

void RestHandler::PodLog(const HttpRequest& req, ResponseWriter& w, const std::string& ns,
                         const std::string& name) {
  auto lo = LogOptionsOf(req);
  if (!lo.ok()) return SendError(w, lo.error());
  auto target = PodOnNode(ns, name, lo->container);
  if (!target.ok()) return SendError(w, target.error());
  auto stream = target->node->Logs(target->pod, *lo);
  if (!stream.ok()) return SendError(w, stream.error());
  ServeLog(w, **stream);
}

void RestHandler::PodExec(const HttpRequest& req, ResponseWriter& w, const std::string& ns,
                          const std::string& name) {
  auto er = ExecRequestOf(req);
  if (!er.ok()) return SendError(w, er.error());
  auto target = PodOnNode(ns, name, er->options.container);
  if (!target.ok()) return SendError(w, target.error());
  auto upgrade = ExecUpgradeOf(req);
  if (!upgrade.ok()) return SendError(w, upgrade.error());
  auto process = target->node->Exec(target->pod, er->options);
  if (!process.ok()) return SendError(w, process.error());
  ServeExec(req, w, *er, *upgrade, **process);
}

void RestHandler::Watch(const HttpRequest& req, ResponseWriter& w, Resource& res,
                        const std::string& ns, const ListOptions& opts, bool table) {
  auto stream = res.WatchStored(ns, opts);
  if (!stream.ok()) {
    // Too old: the protocol answers 200 with one ERROR event carrying a 410 Status.
    if (stream.error().code != 410) return SendError(w, stream.error());
    if (!w.StartStream(200, kJson)) return;
    w.WriteChunk("{\"type\":\"ERROR\",\"object\":" + stream.error().ToJson() + "}\n");
    w.EndStream();
    return;
  }
  EventStream* s = stream->get();
  {
    std::lock_guard lock(streams_mu_);
    if (shutting_down_) s->Close();
    streams_.insert(s);
  }
  WatchResponseOptions wo;
  wo.table = table;
  wo.include_object = IncludeObject(req);
  wo.allow_bookmarks = opts.allow_bookmarks;
  wo.bookmark_interval = opts_.bookmark_interval;
  wo.timeout = opts_.max_watch;
  if (opts.timeout_seconds > 0) {
    wo.timeout =
        std::min<std::chrono::milliseconds>(wo.timeout, std::chrono::seconds(opts.timeout_seconds));
  }
  const bool notifies = s->Notifies();
  auto response = std::make_shared<WatchResponse>(*std::move(stream), res, api_.clock(),
                                                  std::move(wo), [this, s] {
                                                    std::lock_guard lock(streams_mu_);
                                                    streams_.erase(s);
                                                  });
  if (!w.StartStream(200, kJson)) return;
  // Served by the server without a thread when the stream says when it has news.
  if (notifies && w.Detach(response)) return;
  response->Serve(w);
}

void RestHandler::Shutdown() {
  std::lock_guard lock(streams_mu_);
  shutting_down_ = true;
  for (EventStream* s : streams_) s->Close();
}

}  // namespace kvol::apiserver
