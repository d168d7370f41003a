// spdlog behind the facade.
#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace kvol::log {
namespace {
spdlog::logger& Logger() {
  static auto logger = [] {
    auto l = spdlog::stderr_color_mt("kvol");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
    return l;
  }();
  return *logger;
}
}  // namespace

void Info(const std::string& message) { Logger().info(message); }
void Warn(const std::string& message) { Logger().warn(message); }
void Error(const std::string& message) { Logger().error(message); }
void SetQuiet(bool quiet) { Logger().set_level(quiet ? spdlog::level::warn : spdlog::level::info); }

}  // namespace kvol::log
