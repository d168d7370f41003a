// Container probes (livenessProbe, readinessProbe, startupProbe), as Kubernetes checks them.
#include "api/validation_internal.h"

namespace kvol::api::validation_internal {

namespace {

// A probe as Kubernetes' validateProbe checks it: exactly one handler, non-negative numbers,
// a success threshold of 1 where only one success counts (liveness, startup).
void ValidateProbe(FieldErrors& errs, const Probe& probe, bool one_success, bool readiness,
                   const Path& p) {
  int handlers = 0;
  auto handler = [&](bool set, std::string_view name) {
    if (!set) return;
    if (++handlers > 1) {
      errs.push_back(Forbidden(p.Child(name), "may not specify more than 1 handler type"));
    }
  };
  handler(probe.exec.has_value(), "exec");
  handler(probe.http_get.has_value(), "httpGet");
  handler(probe.tcp_socket.has_value(), "tcpSocket");
  handler(probe.grpc.has_value(), "grpc");
  if (handlers == 0) errs.push_back(Required(p, "must specify a handler type"));
  if (probe.exec && probe.exec->command.empty()) {
    errs.push_back(Required(p.Child("exec").Child("command")));
  }
  auto port_of = [&](const Json& port, const Path& pp) {
    if (port.is_number_integer()) {
      const int64_t n = port.get<int64_t>();
      if (n < 1 || n > 65535) {
        errs.push_back(Invalid(pp, n, "must be between 1 and 65535, inclusive"));
      }
    } else if (!port.is_string() || port.get<std::string>().empty()) {
      errs.push_back(Required(pp));
    }
  };
  if (probe.http_get) {
    port_of(probe.http_get->port, p.Child("httpGet").Child("port"));
    const std::string& scheme = probe.http_get->scheme;
    if (scheme != "HTTP" && scheme != "HTTPS") {
      errs.push_back(NotSupported(p.Child("httpGet").Child("scheme"), scheme, {"HTTP", "HTTPS"}));
    }
  }
  if (probe.tcp_socket) port_of(probe.tcp_socket->port, p.Child("tcpSocket").Child("port"));
  for (auto [value, name] : {std::pair{probe.initial_delay_seconds, "initialDelaySeconds"},
                             std::pair{probe.timeout_seconds, "timeoutSeconds"},
                             std::pair{probe.period_seconds, "periodSeconds"},
                             std::pair{probe.success_threshold, "successThreshold"},
                             std::pair{probe.failure_threshold, "failureThreshold"}}) {
    if (value < 0) {
      errs.push_back(Invalid(p.Child(name), int64_t{value}, "must be greater than or equal to 0"));
    }
  }
  if (one_success && probe.success_threshold != 1) {
    errs.push_back(
        Invalid(p.Child("successThreshold"), int64_t{probe.success_threshold}, "must be 1"));
  }
  if (readiness && probe.termination_grace_period_seconds) {
    errs.push_back(Invalid(p.Child("terminationGracePeriodSeconds"),
                           *probe.termination_grace_period_seconds,
                           "must not be set for readinessProbes"));
  }
  if (probe.termination_grace_period_seconds && *probe.termination_grace_period_seconds <= 0) {
    errs.push_back(Invalid(p.Child("terminationGracePeriodSeconds"),
                           *probe.termination_grace_period_seconds, "must be greater than 0"));
  }
}

}  // namespace

void ValidateProbes(FieldErrors& errs, const Container& c, bool init, const Path& p) {
  const struct {
    const std::optional<Probe>& probe;
    const char* name;
    bool one_success, readiness;
  } probes[] = {{c.liveness_probe, "livenessProbe", true, false},
                {c.readiness_probe, "readinessProbe", false, true},
                {c.startup_probe, "startupProbe", true, false}};
  for (const auto& [probe, name, one_success, readiness] : probes) {
    if (!probe) continue;
    if (init) {
      errs.push_back(Forbidden(p.Child(name),
                               "may not be set for init containers without "
                               "restartPolicy=Always"));
      continue;
    }
    ValidateProbe(errs, *probe, one_success, readiness, p.Child(name));
  }
}

}  // namespace kvol::api::validation_internal
