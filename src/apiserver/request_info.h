// What a request asks of the API, as Kubernetes' RequestInfoFactory reads it from the URL: the
// verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE, DELETECOLLECTION, CONNECT), and for a
// resource request its group, version, resource, subresource and scope. The request metrics
// are labelled with it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "apiserver/http_server.h"

namespace kvol::apiserver {

struct RequestInfo {
  bool resource_request = false;
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  std::string namespace_;  // of a namespaced request
  std::string name;        // of a request for one object
  // "resource" (one named object), "namespace" (a collection in a namespace), "cluster" (a
  // cluster-wide collection, or a cluster-scoped object's collection); "" for others.
  std::string scope;
  bool dry_run = false;
};

// The segments of a URL path, empty ones dropped: "/api/v1/pods" -> {"api", "v1", "pods"}.
std::vector<std::string> PathParts(std::string_view path);

// Whether a boolean query parameter (watch, allowWatchBookmarks) is set, as Kubernetes reads it.
bool QueryTrue(const std::string& value);

// The request's info; `parts` is PathParts(req.path).
RequestInfo RequestInfoOf(const HttpRequest& req, const std::vector<std::string>& parts);

}  // namespace kvol::apiserver
