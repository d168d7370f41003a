// Logging facade: one readable line per event, on standard error. Wraps spdlog so the rest of
// the code does not depend on it directly.
#pragma once

#include <string>

namespace kvol::log {

void Info(const std::string& message);
void Warn(const std::string& message);
void Error(const std::string& message);

// Silences Info (tests and benchmarks).
void SetQuiet(bool quiet);

}  // namespace kvol::log
