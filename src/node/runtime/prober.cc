// The prober's schedule and thresholds, and the three handlers.
#include "node/runtime/prober.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "base/thread.h"

namespace kvol::node::runtime {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// kubelet's defaults, for a probe that was not defaulted (one adopted from an old object).
milliseconds Period(const api::Probe& p) {
  return seconds(p.period_seconds > 0 ? p.period_seconds : 10);
}
milliseconds Timeout(const api::Probe& p) {
  return seconds(p.timeout_seconds > 0 ? p.timeout_seconds : 1);
}
int SuccessThreshold(const api::Probe& p) {
  return p.success_threshold > 0 ? p.success_threshold : 1;
}
int FailureThreshold(const api::Probe& p) {
  return p.failure_threshold > 0 ? p.failure_threshold : 3;
}

// A connected socket to host:port, or why there is none.
int Connect(const std::string& host, int port, milliseconds timeout, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *error = "dial tcp " + host + ":" + service + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int n = poll(&p, 1, static_cast<int>(timeout.count()));
      socklen_t len = sizeof err;
      if (n <= 0) {
        err = ETIMEDOUT;
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
    }
    if (err != 0) {
      // In Go's words, as kubelet's messages have them: "connection refused".
      std::string why = std::strerror(err);
      if (!why.empty())
        why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
      *error = "dial tcp " + host + ":" + service + ": connect: " + why;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

std::string_view ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kStartup:
      return "Startup";
    case ProbeKind::kLiveness:
      return "Liveness";
    case ProbeKind::kReadiness:
      return "Readiness";
  }
  return "";
}

ProbeResult RunExecProbe(ExecStream& stream, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string output;
  std::vector<std::pair<int, std::string>> chunk;
  while (true) {
    chunk.clear();
    const std::optional<int> code = stream.Collect(&chunk);
    for (const auto& [_, data] : chunk) output += data;
    if (code) return {.success = *code == 0, .output = output};
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      stream.Kill();
      return {.success = false,
              .output = "command timed out after " +
                        std::to_string(std::chrono::duration_cast<seconds>(timeout).count()) + "s"};
    }
    pollfd p{stream.fd(), stream.PollEvents(), 0};
    poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
  }
}

ProbeResult RunTcpProbe(const std::string& host, int port, milliseconds timeout) {
  std::string error;
  const int fd = Connect(host, port, timeout, &error);
  if (fd < 0) return {.success = false, .output = error};
  close(fd);
  return {.success = true};
}

ProbeResult RunHttpProbe(const api::HTTPGetAction& get, const std::string& host, int port,
                         milliseconds timeout) {
  if (!get.scheme.empty() && get.scheme != "HTTP") {
    return {.success = false, .output = "httpGet probes over " + get.scheme + " are not supported"};
  }
  const std::string url =
      "http://" + host + ":" + std::to_string(port) + (get.path.empty() ? "/" : get.path);
  std::string error;
  const int fd = Connect(host, port, timeout, &error);
  if (fd < 0) return {.success = false, .output = "Get \"" + url + "\": " + error};
  std::string request = "GET " + (get.path.empty() ? std::string("/") : get.path) +
                        " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                        "\r\nUser-Agent: kube-probe/1.32\r\nAccept: */*\r\nConnection: close\r\n";
  for (const auto& h : get.http_headers) request += h.name + ": " + h.value + "\r\n";
  request += "\r\n";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string response;
  size_t sent = 0;
  while (response.find("\r\n") == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      close(fd);
      return {.success = false,
              .output = "Get \"" + url +
                        "\": context deadline exceeded (Client.Timeout exceeded "
                        "while awaiting headers)"};
    }
    pollfd p{fd, static_cast<short>(sent < request.size() ? POLLOUT : POLLIN), 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (sent < request.size()) {
      const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      continue;
    }
    char buf[1024];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  // "HTTP/1.1 200 OK"
  const size_t space = response.find(' ');
  const int code = space == std::string::npos ? 0 : std::atoi(response.c_str() + space + 1);
  if (code >= 200 && code < 400) return {.success = true};
  if (code == 0) return {.success = false, .output = "Get \"" + url + "\": EOF"};
  return {.success = false, .output = "HTTP probe failed with statuscode: " + std::to_string(code)};
}

Prober::Prober(const os::Clock& clock, ProberCallbacks callbacks)
    : clock_(clock), callbacks_(std::move(callbacks)) {}

Prober::~Prober() { Stop(); }

void Prober::Start() {
  thread_ = std::thread([this] {
    SetThreadName("prober");
    Loop();
  });
}

void Prober::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ProbeAddress ProbeAddressOf(const api::Probe& probe, const api::Container& spec,
                            const std::string& pod_ip) {
  const api::Json* port = nullptr;
  ProbeAddress a{.host = pod_ip};
  if (probe.http_get) {
    port = &probe.http_get->port;
    if (!probe.http_get->host.empty()) a.host = probe.http_get->host;
  } else if (probe.tcp_socket) {
    port = &probe.tcp_socket->port;
    if (!probe.tcp_socket->host.empty()) a.host = probe.tcp_socket->host;
  } else if (probe.grpc) {
    a.port = probe.grpc->port;
  }
  if (port && port->is_number_integer()) a.port = port->get<int>();
  if (port && port->is_string()) {
    const api::Json& ports =
        spec.unknown_fields.is_object() && spec.unknown_fields.contains("ports")
            ? spec.unknown_fields["ports"]
            : api::Json();
    for (const auto& p : ports.is_array() ? ports : api::Json::array()) {
      if (p.is_object() && p.value("name", "") == port->get<std::string>() &&
          p.contains("containerPort") && p["containerPort"].is_number_integer()) {
        a.port = p["containerPort"].get<int>();
      }
    }
  }
  return a;
}

void Prober::Watch(const ProbeTarget& target, const api::Container& spec, os::MonoTime started,
                   const std::string& pod_ip) {
  std::lock_guard lock(mu_);
  if (watched_.count(target)) return;
  Watched w;
  for (auto [kind, probe] : {std::pair{ProbeKind::kStartup, &spec.startup_probe},
                             std::pair{ProbeKind::kLiveness, &spec.liveness_probe},
                             std::pair{ProbeKind::kReadiness, &spec.readiness_probe}}) {
    if (!*probe) continue;
    ProbeState s{.kind = kind, .probe = **probe, .address = ProbeAddressOf(**probe, spec, pod_ip)};
    s.next = started + seconds(std::max((*probe)->initial_delay_seconds, 0));
    if (kind == ProbeKind::kLiveness) s.result = true;
    if (kind == ProbeKind::kReadiness) s.result = false;
    w.probes.push_back(std::move(s));
  }
  if (w.probes.empty()) return;
  watched_.emplace(target, std::move(w));
  cv_.notify_all();
}

void Prober::Forget(const std::string& uid, const std::string& container,
                    const std::string& keep_run) {
  std::lock_guard lock(mu_);
  for (auto it = watched_.lower_bound({uid, container, ""}); it != watched_.end();) {
    if (it->first.uid != uid || it->first.container != container) break;
    it = it->first.run_id == keep_run ? std::next(it) : watched_.erase(it);
  }
}

Prober::Status Prober::StatusOf(const ProbeTarget& target) const {
  std::lock_guard lock(mu_);
  Status st;
  auto it = watched_.find(target);
  if (it == watched_.end()) return st;
  for (const auto& p : it->second.probes) {
    if (p.kind == ProbeKind::kStartup) st.started = p.result.value_or(false);
    if (p.kind == ProbeKind::kReadiness) st.ready = p.result.value_or(false);
  }
  st.ready = st.ready && st.started;
  return st;
}

std::optional<os::MonoTime> Prober::RunDue() {
  // One due probe at a time: the lock is let go while it runs.
  while (true) {
    ProbeTarget target;
    ProbeState probe;
    {
      std::lock_guard lock(mu_);
      const os::MonoTime now = clock_.Monotonic();
      std::optional<os::MonoTime> next;
      bool found = false;
      for (auto& [t, w] : watched_) {
        const bool started = std::none_of(w.probes.begin(), w.probes.end(), [](const auto& p) {
          return p.kind == ProbeKind::kStartup && !p.result.value_or(false);
        });
        for (auto& p : w.probes) {
          if (p.gave_up || (p.kind != ProbeKind::kStartup && !started)) continue;
          if (p.kind == ProbeKind::kStartup && p.result.value_or(false)) continue;  // done
          if (!found && p.next <= now) {
            target = t;
            probe = p;
            p.next = now + Period(p.probe);
            found = true;
          }
          if (!next || p.next < *next) next = p.next;
        }
      }
      if (!found) return next;
    }
    const ProbeResult r = callbacks_.run(target, probe.probe, probe.address, Timeout(probe.probe));
    if (r.unknown) continue;
    bool changed = false, give_up = false;
    std::string message;
    {
      std::lock_guard lock(mu_);
      auto it = watched_.find(target);
      if (it == watched_.end()) continue;  // forgotten while it ran
      for (auto& p : it->second.probes) {
        if (p.kind != probe.kind) continue;
        if (r.success) {
          p.failures = 0;
          if (++p.successes >= SuccessThreshold(p.probe) && p.result != true) {
            p.result = true;
            changed = true;
          }
        } else {
          p.successes = 0;
          if (++p.failures >= FailureThreshold(p.probe) && p.result != false) {
            p.result = false;
            changed = true;
            if (p.kind != ProbeKind::kReadiness) give_up = p.gave_up = true;
          }
        }
      }
    }
    if (!r.success && callbacks_.failed) callbacks_.failed(target, probe.kind, r.output);
    if (give_up && callbacks_.unhealthy) {
      callbacks_.unhealthy(
          target, probe.kind,
          "Container " + target.container + " failed " +
              std::string(probe.kind == ProbeKind::kLiveness ? "liveness" : "startup") +
              " probe, will be restarted");
    }
    if (changed && callbacks_.changed) callbacks_.changed();
  }
}

void Prober::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const std::optional<os::MonoTime> next = RunDue();
    lock.lock();
    if (stopping_) return;
    if (next) {
      clock_.WaitUntil(cv_, lock, *next);
    } else {
      cv_.wait(lock);
    }
  }
}

}  // namespace kvol::node::runtime
