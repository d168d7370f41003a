#include "api/exec_status.h"

#include "api/codec.h"
#include "base/strings.h"

namespace kvol::api {

std::string ExecOutcome(const std::vector<std::string>& command, int exit_code) {
  if (exit_code == 0) return R"({"metadata":{},"status":"Success"})";
  std::string cmd;
  for (const auto& c : command) cmd += (cmd.empty() ? "" : " ") + c;
  const std::string code = std::to_string(exit_code);
  Json st = {{"metadata", Json::object()},
             {"status", "Failure"},
             {"message", "command terminated with non-zero exit code: error executing command [" +
                             cmd + "], exit code " + code},
             {"reason", "NonZeroExitCode"},
             {"details", {{"causes", {{{"reason", "ExitCode"}, {"message", code}}}}}}};
  return api::DumpJson(st);
}

std::optional<int> ExitCodeOf(std::string_view outcome) {
  auto st = api::ParseJson(outcome);
  if (!st.ok() || !st->is_object()) return std::nullopt;
  const std::string status = st->value("status", "");
  if (status == "Success") return 0;
  if (status != "Failure") return std::nullopt;
  auto details = st->find("details");
  if (details != st->end() && details->is_object()) {
    auto causes = details->find("causes");
    if (causes != details->end() && causes->is_array()) {
      for (const auto& c : *causes) {
        if (!c.is_object() || c.value("reason", "") != "ExitCode") continue;
        int64_t code = 0;
        if (ParseInt64(c.value("message", ""), &code)) return static_cast<int>(code);
      }
    }
  }
  return std::nullopt;
}

}  // namespace kvol::api
