// The process's registry, its collectors, and the process's own metrics.
#include "metrics/metrics.h"

#include <dirent.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <vector>

namespace kvol::metrics {
namespace {

prometheus::MetricFamily Single(std::string name, std::string help, prometheus::MetricType type,
                                double value) {
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return {std::move(name), std::move(help), type, {m}};
}

// Kubernetes' process metrics (client_golang's process collector), read from /proc/self.
class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> out;
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    std::ifstream stat("/proc/self/stat");
    std::string line;
    if (std::getline(stat, line)) {
      // Fields after the command, which may hold spaces and ends at the last ')'.
      std::istringstream rest(line.substr(line.rfind(')') + 2));
      std::vector<std::string> f((std::istream_iterator<std::string>(rest)),
                                 std::istream_iterator<std::string>());
      // f[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
      auto field = [&](size_t n) { return n - 3 < f.size() ? std::stod(f[n - 3]) : 0.0; };
      out.push_back(Single("process_cpu_seconds_total",
                           "Total user and system CPU time spent in seconds.", MetricType::Counter,
                           (field(14) + field(15)) / ticks));
      out.push_back(Single("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                           MetricType::Gauge, field(23)));
      out.push_back(Single("process_resident_memory_bytes", "Resident memory size in bytes.",
                           MetricType::Gauge, field(24) * page));
      out.push_back(Single("process_start_time_seconds",
                           "Start time of the process since unix epoch in seconds.",
                           MetricType::Gauge, BootTime() + field(22) / ticks));
    }
    out.push_back(Single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(OpenFds())));
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
      out.push_back(Single("process_max_fds", "Maximum number of open file descriptors.",
                           MetricType::Gauge, static_cast<double>(lim.rlim_cur)));
    }
    return out;
  }

 private:
  static double BootTime() {
    std::ifstream in("/proc/stat");
    std::string key;
    double value = 0;
    while (in >> key) {
      if (key == "btime" && in >> value) return value;
      in.ignore(1 << 20, '\n');
    }
    return 0;
  }
  static size_t OpenFds() {
    size_t n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
      closedir(d);
      if (n > 0) --n;  // the directory being read
    }
    return n;
  }
};

struct Collectors {
  std::mutex mu;
  std::vector<std::weak_ptr<prometheus::Collectable>> live;
};

Collectors& TheCollectors() {
  static Collectors* c = new Collectors();  // never destroyed: asked until the process ends
  return *c;
}

}  // namespace

prometheus::Registry& Registry() {
  static auto* r = new prometheus::Registry();
  return *r;
}

std::vector<prometheus::MetricFamily> Collector::Collect() const {
  std::lock_guard lock(mu_);
  return source_ ? source_() : std::vector<prometheus::MetricFamily>();
}

void Collector::Detach() {
  std::lock_guard lock(mu_);
  source_ = nullptr;
}

prometheus::MetricFamily GaugeFamily(std::string name, std::string help,
                                     const std::map<Labels, double>& values) {
  prometheus::MetricFamily f{std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
  for (const auto& [labels, value] : values) {
    prometheus::ClientMetric m;
    m.label = labels;
    m.gauge.value = value;
    f.metric.push_back(std::move(m));
  }
  return f;
}

void AddCollector(const std::shared_ptr<prometheus::Collectable>& collector) {
  auto& c = TheCollectors();
  std::lock_guard lock(c.mu);
  std::erase_if(c.live, [](const auto& w) { return w.expired(); });
  c.live.push_back(collector);
}

std::string ExposeOnly(const std::vector<const prometheus::Collectable*>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto* c : collectables) {
    auto got = c->Collect();
    families.insert(families.end(), std::make_move_iterator(got.begin()),
                    std::make_move_iterator(got.end()));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

std::string Expose() {
  std::vector<std::shared_ptr<prometheus::Collectable>> held;
  {
    auto& c = TheCollectors();
    std::lock_guard lock(c.mu);
    for (const auto& w : c.live) {
      if (auto p = w.lock()) held.push_back(std::move(p));
    }
  }
  static const ProcessCollector process;
  std::vector<const prometheus::Collectable*> all = {&Registry(), &process};
  for (const auto& p : held) all.push_back(p.get());
  return ExposeOnly(all);
}

}  // namespace kvol::metrics
