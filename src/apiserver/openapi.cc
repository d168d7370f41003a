// OpenAPI generation from the KVOL_FIELDS field lists.
#include "apiserver/openapi.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <set>
#include <typeinfo>

#include "api/scheme.h"
#include "apiserver/discovery.h"
#include "apiserver/strategy.h"

namespace kvol::apiserver {
namespace {

using api::Json;

template <class T>
struct Tag {};

template <class T>
Json SchemaOf(Tag<T>);

Json SchemaOf(Tag<std::string>) { return {{"type", "string"}}; }
Json SchemaOf(Tag<bool>) { return {{"type", "boolean"}}; }
Json SchemaOf(Tag<int32_t>) { return {{"type", "integer"}, {"format", "int32"}}; }
Json SchemaOf(Tag<int64_t>) { return {{"type", "integer"}, {"format", "int64"}}; }
Json SchemaOf(Tag<api::Quantity>) {
  return {{"type", "string"},
          {"description",
           "Quantity is a fixed-point representation of a number, such as 5Gi, 100m or 1e3."}};
}
Json SchemaOf(Tag<api::Time>) { return {{"type", "string"}, {"format", "date-time"}}; }
Json SchemaOf(Tag<api::MicroTime>) { return {{"type", "string"}, {"format", "date-time"}}; }
Json SchemaOf(Tag<api::Json>) { return {{"x-kubernetes-preserve-unknown-fields", true}}; }

template <class T>
Json SchemaOf(Tag<std::optional<T>>) {
  return SchemaOf(Tag<T>{});
}
template <class T>
Json SchemaOf(Tag<api::Boxed<T>>) {
  return SchemaOf(Tag<T>{});
}
template <class T>
Json SchemaOf(Tag<std::vector<T>>) {
  return {{"type", "array"}, {"items", SchemaOf(Tag<T>{})}};
}
template <class T>
Json SchemaOf(Tag<std::map<std::string, T>>) {
  return {{"type", "object"}, {"additionalProperties", SchemaOf(Tag<T>{})}};
}

// Named schemas of nested API structs, collected while a document is generated: kubectl
// explain shows the last segment of a $ref as the field's type (<PersistentVolumeSpec>).
thread_local Json* g_schemas = nullptr;

std::string PackageOf(std::string_view type) {
  static const std::set<std::string_view> kMeta = {
      "ObjectMeta", "OwnerReference", "LabelSelector", "LabelSelectorRequirement", "ListMeta"};
  static const std::set<std::string_view> kStorage = {
      "StorageClass",  "VolumeAttachment", "VolumeAttachmentSpec", "VolumeAttachmentSource",
      "VolumeAttachmentStatus", "VolumeError", "CSIDriver", "CSIDriverSpec", "TokenRequest",
      "CSINode", "CSINodeSpec", "CSINodeDriver", "VolumeNodeResources", "CSIStorageCapacity"};
  if (kMeta.count(type)) return "io.k8s.apimachinery.pkg.apis.meta.v1.";
  if (kStorage.count(type)) return "io.k8s.api.storage.v1.";
  if (type == "Lease" || type == "LeaseSpec") return "io.k8s.api.coordination.v1.";
  if (type.starts_with("VolumeSnapshot")) return "io.k8s.storage.snapshot.v1.";
  return "io.k8s.api.core.v1.";
}

template <class T>
std::string SchemaName() {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status);
  std::string full = status == 0 && demangled ? demangled : typeid(T).name();
  std::free(demangled);
  std::string type = full.substr(full.rfind(':') + 1);
  return PackageOf(type) + type;
}

struct PropertyVisitor {
  Json& props;
  template <class F>
  void operator()(std::string_view key, const F&, api::Emit = api::Emit::kOmitEmpty) {
    props[std::string(key)] = SchemaOf(Tag<F>{});
  }
};

template <class T>
Json StructSchema() {
  Json props = Json::object();
  PropertyVisitor v{props};
  static const T instance{};
  T::Fields(instance, v);
  return {{"type", "object"}, {"properties", std::move(props)}};
}

template <class T>
Json SchemaOf(Tag<T>) {
  static_assert(api::ApiStruct<T>, "no OpenAPI schema for this field type");
  const std::string name = SchemaName<T>();
  if (g_schemas != nullptr && !g_schemas->contains(name)) {
    (*g_schemas)[name] = Json::object();  // placeholder first: no infinite recursion
    (*g_schemas)[name] = StructSchema<T>();
  }
  return {{"allOf", Json::array({{{"$ref", "#/components/schemas/" + name}}})}, {"default", Json::object()}};
}

Json Gvk(const api::KindInfo& k) {
  return Json::array({{{"group", k.group}, {"kind", k.kind}, {"version", k.version}}});
}

Json Parameter(const char* name, const char* description) {
  return {{"name", name}, {"in", "query"}, {"description", description},
          {"schema", {{"type", "string"}}}, {"uniqueItems", true}};
}

Json Operation(const api::KindInfo& k, const std::string& action, const std::string& ref,
               bool write) {
  Json op = {{"operationId", action + std::string(k.kind)},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", Gvk(k)[0]},
             {"responses",
              {{"200",
                {{"description", "OK"},
                 {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}}}}}};
  if (write) {
    op["parameters"] = Json::array(
        {Parameter("dryRun", "When present, indicates that modifications should not be persisted."),
         Parameter("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
         Parameter("fieldValidation",
                   "fieldValidation instructs the server on how to handle objects in the request "
                   "containing unknown or duplicate fields. Valid values are: Ignore, Warn, "
                   "Strict.")});
    // Strategic merge is left out on purpose: the schemas carry no patch-merge-key extensions,
    // so kubectl computes apply patches from its own knowledge of the built-in kinds.
    Json body = {{"schema", {{"$ref", ref}}}};
    op["requestBody"] = {
        {"content", action == "patch"
                        ? Json{{"application/json-patch+json", body},
                               {"application/merge-patch+json", body}}
                        : Json{{"application/json", body}}},
        {"required", true}};
  }
  return op;
}

// One group-version's document (v3) or part of the whole (v2).
struct GroupVersionDoc {
  Json schemas = Json::object();
  Json paths = Json::object();
};

template <class T>
void AddKind(GroupVersionDoc& d) {
  const auto& k = api::KindInfoOf<T>();
  const std::string name = SchemaName<T>();
  g_schemas = &d.schemas;
  Json schema = StructSchema<T>();
  g_schemas = nullptr;
  schema["x-kubernetes-group-version-kind"] = Gvk(k);
  d.schemas[name] = std::move(schema);
  Json list = {{"type", "object"},
               {"properties",
                {{"apiVersion", {{"type", "string"}}},
                 {"kind", {{"type", "string"}}},
                 {"metadata", {{"type", "object"}}},
                 {"items", {{"type", "array"}, {"items", {{"$ref", ""}}}}}}},
               {"x-kubernetes-group-version-kind",
                Json::array({{{"group", k.group}, {"kind", std::string(k.kind) + "List"},
                              {"version", k.version}}})}};
  const std::string ref_prefix = "#/components/schemas/";
  list["properties"]["items"]["items"]["$ref"] = ref_prefix + name;
  d.schemas[name + "List"] = std::move(list);

  const std::string base = k.group.empty() ? "/api/" + std::string(k.version)
                                           : "/apis/" + std::string(k.group) + "/" + std::string(k.version);
  const std::string coll = k.namespaced ? base + "/namespaces/{namespace}/" + std::string(k.resource)
                                        : base + "/" + std::string(k.resource);
  const std::string ref = ref_prefix + name;
  d.paths[coll] = {{"get", Operation(k, "list", ref + "List", false)},
                   {"post", Operation(k, "post", ref, true)},
                   {"delete", Operation(k, "deletecollection", ref, false)}};
  d.paths[coll + "/{name}"] = {{"get", Operation(k, "get", ref, false)},
                               {"put", Operation(k, "put", ref, true)},
                               {"patch", Operation(k, "patch", ref, true)},
                               {"delete", Operation(k, "delete", ref, false)}};
  if (kStatusSubresource<T>) {
    d.paths[coll + "/{name}/status"] = {{"get", Operation(k, "get", ref, false)},
                                        {"put", Operation(k, "put", ref, true)},
                                        {"patch", Operation(k, "patch", ref, true)}};
  }
}

// Swagger 2.0 says "#/definitions/" where OpenAPI 3 says "#/components/schemas/".
Json V2Schema(Json s) {
  if (s.is_object()) {
    for (auto& [key, value] : s.items()) {
      if (key == "$ref" && value.is_string()) {
        std::string ref = value.get<std::string>();
        constexpr std::string_view kV3 = "#/components/schemas/";
        if (ref.rfind(kV3, 0) == 0) value = "#/definitions/" + ref.substr(kV3.size());
      } else {
        value = V2Schema(std::move(value));
      }
    }
  } else if (s.is_array()) {
    for (auto& v : s) v = V2Schema(std::move(v));
  }
  return s;
}

// An operation of a v3 path in v2 form: the body as a parameter, responses with a schema.
Json V2Operation(const Json& op) {
  Json out = op;
  out.erase("requestBody");
  Json params = Json::array();
  for (const auto& p : op.value("parameters", Json::array())) {
    Json q = p;
    q["type"] = "string";
    q.erase("schema");
    params.push_back(std::move(q));
  }
  if (op.contains("requestBody")) {
    const Json& content = op["requestBody"]["content"];
    Json consumes = Json::array();
    Json schema;
    for (const auto& [type, body] : content.items()) {
      consumes.push_back(type);
      schema = body["schema"];
    }
    out["consumes"] = std::move(consumes);
    params.push_back({{"name", "body"}, {"in", "body"}, {"required", true},
                      {"schema", V2Schema(schema)}});
  }
  if (!params.empty()) out["parameters"] = std::move(params);
  Json responses = Json::object();
  for (const auto& [code, r] : op["responses"].items()) {
    Json v2 = {{"description", r.value("description", "")}};
    if (r.contains("content") && r["content"].contains("application/json")) {
      v2["schema"] = V2Schema(r["content"]["application/json"]["schema"]);
    }
    responses[code] = std::move(v2);
  }
  out["responses"] = std::move(responses);
  out["produces"] = Json::array({"application/json"});
  out["schemes"] = Json::array({"https"});
  return out;
}

// Cached: documents never change while the server runs.
struct Documents {
  std::map<std::string, std::string> v3;  // "api/v1" -> document
  std::string v3_index;
  std::string v2;  // every group-version in one Swagger 2.0 document
};

const Documents& Docs() {
  static const Documents docs = [] {
    Documents d;
    std::map<std::string, GroupVersionDoc> gvs3;
    api::ForEachKind([&](auto t) {
      using T = typename decltype(t)::type;
      const auto& k = api::KindInfoOf<T>();
      const std::string gv = k.group.empty() ? "api/" + std::string(k.version)
                                             : "apis/" + std::string(k.group) + "/" + std::string(k.version);
      AddKind<T>(gvs3[gv]);
    });
    Json index = {{"paths", Json::object()}};
    for (auto& [gv, doc] : gvs3) {
      Json full = {{"openapi", "3.0.0"},
                   {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                   {"paths", doc.paths},
                   {"components", {{"schemas", doc.schemas}}}};
      d.v3[gv] = api::DumpJson(full);
      index["paths"][gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=" +
                                                      std::to_string(std::hash<std::string>{}(d.v3[gv]))}};
    }
    d.v3_index = api::DumpJson(index);
    Json v2 = {{"swagger", "2.0"},
               {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
               {"paths", Json::object()},
               {"definitions", Json::object()}};
    for (const auto& [gv, doc] : gvs3) {
      for (const auto& [path, ops] : doc.paths.items()) {
        Json& p = v2["paths"][path];
        for (const auto& [verb, op] : ops.items()) p[verb] = V2Operation(op);
      }
      for (const auto& [name, schema] : doc.schemas.items()) v2["definitions"][name] = V2Schema(schema);
    }
    d.v2 = api::DumpJson(v2);
    return d;
  }();
  return docs;
}

}  // namespace

std::optional<std::string> OpenApiDocument(std::string_view rest) {
  const Documents& d = Docs();
  if (rest == "/v2" || rest == "/v2/") return d.v2;
  if (rest == "/v3" || rest == "/v3/") return d.v3_index;
  constexpr std::string_view kV3 = "/v3/";
  if (rest.substr(0, kV3.size()) == kV3) {
    auto it = d.v3.find(std::string(rest.substr(kV3.size())));
    if (it != d.v3.end()) return it->second;
  }
  return std::nullopt;
}

namespace {

// A length-delimited protobuf field: its key (wire type 2), the length as a varint, the bytes.
void AppendField(std::string& out, int number, std::string_view bytes) {
  auto varint = [&out](uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  };
  varint(static_cast<uint64_t>(number) << 3 | 2);
  varint(bytes.size());
  out.append(bytes);
}

}  // namespace

std::string OpenApiV2Protobuf() {
  std::string info;
  AppendField(info, 1, "Kubernetes");
  AppendField(info, 2, kKvolVersion);
  std::string doc;
  AppendField(doc, 1, "2.0");
  AppendField(doc, 2, info);
  return doc;
}

}  // namespace kvol::apiserver
