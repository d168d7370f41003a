// The prober's schedule and thresholds, and the three handlers.
#include "node/runtime/prober.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/ssl.h>
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

constexpr size_t kMaxProbeOutput = 10 << 10;

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
    for (const auto& [_, data] : chunk) {
      // kubelet keeps the first 10 KiB of a probe's output.
      output.append(
          data, 0,
          std::min(data.size(), kMaxProbeOutput - std::min(kMaxProbeOutput, output.size())));
    }
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

namespace {

// Bounds the socket's next blocking send or receive by `deadline`; false once it has passed.
bool SetDeadline(int fd, std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  timeval tv{.tv_sec = static_cast<time_t>(left.count() / 1'000'000),
             .tv_usec = static_cast<suseconds_t>(left.count() % 1'000'000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return true;
}

// One plain or TLS connection, blocking, each call bounded by the probe's deadline.
class Conn {
 public:
  Conn(int fd, std::chrono::steady_clock::time_point deadline) : fd_(fd), deadline_(deadline) {
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  ~Conn() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    close(fd_);
  }
  // TLS without checking the certificate, as kubelet probes HTTPS.
  bool StartTls(const std::string& host, std::string* error) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = ctx_ ? SSL_new(ctx_) : nullptr;
    if (!ssl_) return (*error = "TLS: out of memory", false);
    SSL_set_verify(ssl_, SSL_VERIFY_NONE, nullptr);
    if (inet_addr(host.c_str()) == INADDR_NONE && host.find(':') == std::string::npos) {
      SSL_set_tlsext_host_name(ssl_, host.c_str());
    }
    SSL_set_fd(ssl_, fd_);
    if (!SetDeadline(fd_, deadline_) || SSL_connect(ssl_) != 1) {
      return (*error = "TLS handshake failed", false);
    }
    return true;
  }
  bool Write(std::string_view data) {
    while (!data.empty()) {
      if (!SetDeadline(fd_, deadline_)) return false;
      const int n = ssl_ ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                         : static_cast<int>(send(fd_, data.data(), data.size(), MSG_NOSIGNAL));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Some bytes; 0 at the end, or on an error or the deadline.
  int Read(char* buf, int size) {
    if (!SetDeadline(fd_, deadline_)) return 0;
    const int n = ssl_ ? SSL_read(ssl_, buf, size) : static_cast<int>(recv(fd_, buf, size, 0));
    return std::max(n, 0);
  }
  bool timed_out() const { return std::chrono::steady_clock::now() >= deadline_; }

 private:
  int fd_;
  std::chrono::steady_clock::time_point deadline_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

bool SameHeader(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

ProbeResult RunHttpProbe(const api::HTTPGetAction& get, const std::string& host, int port,
                         milliseconds timeout) {
  const bool https = get.scheme == "HTTPS";
  if (!get.scheme.empty() && get.scheme != "HTTP" && !https) {
    return {.success = false, .output = "unsupported scheme \"" + get.scheme + "\""};
  }
  const std::string path = get.path.empty() ? "/" : get.path;
  const std::string authority =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  const std::string url = (https ? "https://" : "http://") + authority + path;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string error;
  const int fd = Connect(host, port, timeout, &error);
  if (fd < 0) return {.success = false, .output = "Get \"" + url + "\": " + error};
  Conn conn(fd, deadline);
  if (https && !conn.StartTls(host, &error)) {
    return {.success = false, .output = "Get \"" + url + "\": " + error};
  }
  // kubelet's headers, which the probe's own replace.
  std::vector<std::pair<std::string, std::string>> headers = {
      {"Host", authority}, {"User-Agent", "kube-probe/1.32"}, {"Accept", "*/*"}};
  for (const auto& h : get.http_headers) {
    auto same = std::find_if(headers.begin(), headers.end(),
                             [&](const auto& d) { return SameHeader(d.first, h.name); });
    if (same != headers.end() && same < headers.begin() + 3) {
      same->second = h.value;
    } else {
      headers.emplace_back(h.name, h.value);
    }
  }
  std::string request = "GET " + path + " HTTP/1.1\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "Connection: close\r\n\r\n";
  std::string response;
  if (conn.Write(request)) {
    char buf[1024];
    while (response.find("\r\n") == std::string::npos && response.size() < 8192) {
      const int n = conn.Read(buf, sizeof buf);
      if (n == 0) break;
      response.append(buf, static_cast<size_t>(n));
    }
  }
  // "HTTP/1.1 200 OK"
  const size_t space = response.find(' ');
  const int code = space == std::string::npos ? 0 : std::atoi(response.c_str() + space + 1);
  if (code >= 200 && code < 400) return {.success = true};
  if (code == 0 && conn.timed_out()) {
    return {.success = false,
            .output = "Get \"" + url +
                      "\": context deadline exceeded (Client.Timeout exceeded while awaiting "
                      "headers)"};
  }
  if (code == 0) return {.success = false, .output = "Get \"" + url + "\": EOF"};
  return {.success = false, .output = "HTTP probe failed with statuscode: " + std::to_string(code)};
}

Prober::Prober(const os::Clock& clock, ProberCallbacks callbacks, int threads)
    : clock_(clock), callbacks_(std::move(callbacks)), threads_count_(std::max(threads, 1)) {}

Prober::~Prober() { Stop(); }

void Prober::Start() {
  for (int i = 0; i < threads_count_; ++i) {
    threads_.emplace_back([this] {
      SetThreadName("prober");
      Loop();
    });
  }
}

void Prober::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
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
      if (p.is_object() && p.contains("name") && p["name"].is_string() &&
          p["name"].get<std::string>() == port->get<std::string>() && p.contains("containerPort") &&
          p["containerPort"].is_number_integer()) {
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
  ++generation_;
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
  // One due probe at a time on this thread: the lock is let go while it runs, and the probe is
  // marked running so that no other thread runs it meanwhile.
  while (true) {
    ProbeTarget target;
    ProbeState probe;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return std::nullopt;
      const os::MonoTime now = clock_.Monotonic();
      std::optional<os::MonoTime> next;
      bool found = false;
      for (auto& [t, w] : watched_) {
        const bool started = std::none_of(w.probes.begin(), w.probes.end(), [](const auto& p) {
          return p.kind == ProbeKind::kStartup && !p.result.value_or(false);
        });
        for (auto& p : w.probes) {
          if (p.gave_up || p.running || (p.kind != ProbeKind::kStartup && !started)) continue;
          if (p.kind == ProbeKind::kStartup && p.result.value_or(false)) continue;  // done
          if (!found && p.next <= now) {
            target = t;
            probe = p;
            p.next = now + Period(p.probe);
            p.running = true;
            found = true;
          }
          if (!next || p.next < *next) next = p.next;
        }
      }
      if (!found) return next;
    }
    const ProbeResult r = callbacks_.run(target, probe.probe, probe.address, Timeout(probe.probe));
    bool changed = false, give_up = false;
    {
      std::lock_guard lock(mu_);
      auto it = watched_.find(target);
      if (it == watched_.end()) continue;  // forgotten while it ran
      for (auto& p : it->second.probes) {
        if (p.kind != probe.kind) continue;
        p.running = false;
        if (r.unknown) continue;
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
    if (r.unknown) continue;
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
    const uint64_t seen = generation_;
    lock.unlock();
    const std::optional<os::MonoTime> next = RunDue();
    lock.lock();
    if (stopping_ || generation_ != seen) continue;  // a run watched since: look again
    if (next) {
      clock_.WaitUntil(cv_, lock, *next);
    } else {
      cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    }
  }
}

}  // namespace kvol::node::runtime
