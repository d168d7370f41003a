// What a request asks of the API, as Kubernetes' RequestInfoFactory reads it from the URL: the
// verb (GET, LIST, WATCH, POST, PUT, PATCH, DELETE, DELETECOLLECTION, CONNECT), and for a
// resource request its group, version, resource, subresource and scope. The request metrics
// are labelled with it.
#pragma once

#include <string>

#include "apiserver/http_server.h"

namespace kvol::apiserver {

struct RequestInfo {
  bool resource_request = false;
  std::string verb;
  std::string group;
  std::string version;
  std::string resource;
  std::string subresource;
  // "resource" (one named object), "namespace" (a collection in a namespace), "cluster" (a
  // cluster-wide collection, or a cluster-scoped object's collection); "" for others.
  std::string scope;
  bool dry_run = false;
};

RequestInfo RequestInfoOf(const HttpRequest& req);

}  // namespace kvol::apiserver
