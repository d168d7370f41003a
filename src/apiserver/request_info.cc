// Reading a request's verb and resource from its URL.
#include "apiserver/request_info.h"

#include <vector>

namespace kvol::apiserver {
std::vector<std::string> PathParts(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) parts.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

bool QueryTrue(const std::string& value) {
  return value == "1" || value == "true" || value == "True";
}

RequestInfo RequestInfoOf(const HttpRequest& req, const std::vector<std::string>& parts) {
  RequestInfo info;
  info.verb = req.method;
  info.dry_run = req.HasQuery("dryRun");
  size_t i = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    info.version = parts[1];
    i = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    info.group = parts[1];
    info.version = parts[2];
    i = 3;
  } else {
    return info;  // discovery, /metrics, /version, ...: not a resource
  }
  info.resource_request = true;
  // namespaces/NS/RESOURCE[/NAME[/SUB]]; namespaces[/NAME[/SUB]] is the Namespace itself.
  bool in_namespace = false;
  if (parts[i] == "namespaces" && parts.size() >= i + 3) {
    in_namespace = true;
    info.namespace_ = parts[i + 1];
    i += 2;
  }
  info.resource = parts[i];
  std::string name = parts.size() > i + 1 ? parts[i + 1] : "";
  if (parts.size() > i + 2) info.subresource = parts[i + 2];
  // A Namespace's own subresource (namespaces/NAME/status) was read as a resource above.
  if (in_namespace && parts[i - 2] == "namespaces" && info.group.empty() && parts.size() == i + 1 &&
      (parts[i] == "status" || parts[i] == "finalize")) {
    info.resource = "namespaces";
    name = parts[i - 1];
    info.subresource = parts[i];
    in_namespace = false;
    info.namespace_.clear();
  }
  info.name = name;
  if (!name.empty()) {
    info.scope = "resource";
  } else {
    info.scope = in_namespace ? "namespace" : "cluster";
  }
  const bool watch = QueryTrue(req.Query("watch"));
  if (req.method == "GET" || req.method == "HEAD") {
    info.verb = watch ? "WATCH" : name.empty() ? "LIST" : "GET";
  } else if (req.method == "DELETE" && name.empty()) {
    info.verb = "DELETECOLLECTION";
  } else if (req.method == "PATCH" &&
             req.Header("content-type").find("apply-patch") != std::string::npos) {
    info.verb = "APPLY";
  }
  if (info.subresource == "exec" || info.subresource == "attach" ||
      info.subresource == "portforward" || info.subresource == "proxy") {
    info.verb = "CONNECT";
  }
  return info;
}

}  // namespace kvol::apiserver
