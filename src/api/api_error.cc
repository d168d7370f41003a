// Status objects for API errors, both ways.
#include "api/api_error.h"

#include <array>
#include <utility>

namespace kvol::api {
namespace {

constexpr std::array<std::pair<FieldErrorType, std::string_view>, 10> kCauseTypes = {{
    {FieldErrorType::kNotFound, "FieldValueNotFound"},
    {FieldErrorType::kRequired, "FieldValueRequired"},
    {FieldErrorType::kDuplicate, "FieldValueDuplicate"},
    {FieldErrorType::kInvalid, "FieldValueInvalid"},
    {FieldErrorType::kNotSupported, "FieldValueNotSupported"},
    {FieldErrorType::kForbidden, "FieldValueForbidden"},
    {FieldErrorType::kTooLong, "FieldValueTooLong"},
    {FieldErrorType::kTooMany, "FieldValueTooMany"},
    {FieldErrorType::kInternal, "InternalError"},
    {FieldErrorType::kTypeInvalid, "FieldValueTypeInvalid"},
}};

std::string_view CauseType(FieldErrorType t) {
  for (const auto& [type, name] : kCauseTypes) {
    if (type == t) return name;
  }
  return "FieldValueInvalid";
}

FieldErrorType CauseTypeOf(std::string_view name) {
  for (const auto& [type, n] : kCauseTypes) {
    if (n == name) return type;
  }
  return FieldErrorType::kInvalid;
}

std::string StringField(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Json ApiError::ToStatusJson() const {
  Json j = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  Json details = Json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!kind.empty()) details["kind"] = kind;
  if (!causes.empty()) {
    Json cs = Json::array();
    for (const auto& c : causes) {
      cs.push_back({{"reason", CauseType(c.type)}, {"message", c.Body()}, {"field", c.field}});
    }
    details["causes"] = std::move(cs);
  }
  if (!details.empty()) j["details"] = std::move(details);
  return j;
}

std::string ApiError::ToJson() const { return DumpJson(ToStatusJson()); }

ApiError ApiError::FromStatusJson(const Json& status, int http_code) {
  ApiError e;
  e.code = http_code;
  if (!status.is_object() || StringField(status, "kind") != "Status") {
    e.reason = http_code == 404 ? "NotFound" : "";
    e.message = status.is_string() ? status.get<std::string>() : DumpJson(status);
    return e;
  }
  if (auto c = status.find("code"); c != status.end() && c->is_number_integer()) {
    e.code = c->get<int>();
  }
  e.reason = StringField(status, "reason");
  e.message = StringField(status, "message");
  auto d = status.find("details");
  if (d == status.end() || !d->is_object()) return e;
  e.name = StringField(*d, "name");
  e.group = StringField(*d, "group");
  e.kind = StringField(*d, "kind");
  if (auto cs = d->find("causes"); cs != d->end() && cs->is_array()) {
    for (const auto& c : *cs) {
      if (!c.is_object()) continue;
      FieldError fe;
      fe.type = CauseTypeOf(StringField(c, "reason"));
      fe.field = StringField(c, "field");
      // The message is the error's body ("Invalid value: ...: detail"); keep what follows the
      // type so that Body() reads the same again.
      std::string msg = StringField(c, "message");
      const std::string type(FieldErrorTypeString(fe.type));
      if (msg == type) {
        fe.detail.clear();
      } else if (msg.rfind(type + ": ", 0) == 0) {
        fe.detail = msg.substr(type.size() + 2);
      } else {
        fe.detail = std::move(msg);
      }
      e.causes.push_back(std::move(fe));
    }
  }
  return e;
}

}  // namespace kvol::api
