// Reading a request's verb and resource as Kubernetes' RequestInfoFactory reads them.
#include "apiserver/request_info.h"

#include <gtest/gtest.h>

namespace kvol::apiserver {
namespace {

TEST(RequestInfo, ReadsTheUrlAsKubernetesDoes) {
  struct Case {
    std::string method, target;
    std::string verb, group, resource, subresource, scope;
    bool resource_request = true;
    std::string content_type = {};
  };
  const Case cases[] = {
      {"GET", "/api/v1/namespaces/default/pods/web", "GET", "", "pods", "", "resource"},
      {"GET", "/api/v1/namespaces/default/pods", "LIST", "", "pods", "", "namespace"},
      {"GET", "/api/v1/pods", "LIST", "", "pods", "", "cluster"},
      {"GET", "/api/v1/namespaces/default/pods?watch=true", "WATCH", "", "pods", "", "namespace"},
      {"GET", "/api/v1/nodes/n1", "GET", "", "nodes", "", "resource"},
      {"GET", "/api/v1/namespaces/kube-system", "GET", "", "namespaces", "", "resource"},
      {"GET", "/api/v1/namespaces", "LIST", "", "namespaces", "", "cluster"},
      {"PUT", "/api/v1/namespaces/t1/finalize", "PUT", "", "namespaces", "finalize", "resource"},
      {"PUT", "/api/v1/namespaces/t1/status", "PUT", "", "namespaces", "status", "resource"},
      {"POST", "/api/v1/namespaces/default/persistentvolumeclaims", "POST", "",
       "persistentvolumeclaims", "", "namespace"},
      {"PUT", "/api/v1/namespaces/default/persistentvolumeclaims/c/status", "PUT", "",
       "persistentvolumeclaims", "status", "resource"},
      {"PATCH", "/apis/storage.k8s.io/v1/storageclasses/fast", "PATCH", "storage.k8s.io",
       "storageclasses", "", "resource"},
      {"PATCH", "/apis/storage.k8s.io/v1/storageclasses/fast", "APPLY", "storage.k8s.io",
       "storageclasses", "", "resource", true, "application/apply-patch+yaml"},
      {"DELETE", "/api/v1/namespaces/default/pods", "DELETECOLLECTION", "", "pods", "",
       "namespace"},
      {"DELETE", "/api/v1/persistentvolumes/pv1", "DELETE", "", "persistentvolumes", "",
       "resource"},
      {"POST", "/api/v1/namespaces/default/pods/web/exec?command=ls", "CONNECT", "", "pods", "exec",
       "resource"},
      {"GET", "/api/v1/namespaces/default/pods/web/log", "GET", "", "pods", "log", "resource"},
      {"GET", "/api/v1", "GET", "", "", "", "", false},
      {"GET", "/apis/storage.k8s.io/v1", "GET", "", "", "", "", false},
      {"GET", "/metrics", "GET", "", "", "", "", false},
      {"GET", "/openapi/v2", "GET", "", "", "", "", false},
  };
  for (const auto& c : cases) {
    HttpRequest req;
    req.method = c.method;
    const size_t q = c.target.find('?');
    req.path = c.target.substr(0, q);
    if (q != std::string::npos) {
      const std::string query = c.target.substr(q + 1);
      const size_t eq = query.find('=');
      req.query[query.substr(0, eq)] = query.substr(eq + 1);
    }
    if (!c.content_type.empty()) req.headers["content-type"] = c.content_type;
    const RequestInfo info = RequestInfoOf(req, PathParts(req.path));
    const std::string what = c.method + " " + c.target;
    EXPECT_EQ(info.resource_request, c.resource_request) << what;
    EXPECT_EQ(info.verb, c.verb) << what;
    EXPECT_EQ(info.group, c.group) << what;
    EXPECT_EQ(info.resource, c.resource) << what;
    EXPECT_EQ(info.subresource, c.subresource) << what;
    EXPECT_EQ(info.scope, c.scope) << what;
  }
}

}  // namespace
}  // namespace kvol::apiserver
