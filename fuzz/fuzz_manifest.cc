// libFuzzer target: arbitrary bytes through manifest reading, decoding, defaulting and
// validation, plus the value parsers (quantities, selectors, times). Any crash, leak, sanitizer
// report or broken invariant (re-encoding a decoded object must be stable; decoding JSON text
// straight must agree with parsing and decoding it) is a failure.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/defaults.h"
#include "api/fields.h"
#include "api/labels.h"
#include "api/quantity.h"
#include "api/scheme.h"
#include "api/time.h"
#include "api/validation.h"
#include "manifest/manifest.h"

namespace {

using kvol::api::Json;

template <class T>
void CheckStableEncoding(const Json& doc) {
  kvol::api::FieldErrors errors;
  T obj = kvol::api::DecodeStruct<T>(doc, &errors);
  Json once = kvol::api::EncodeStruct(obj);
  T again = kvol::api::DecodeStruct<T>(once, &errors);
  if (kvol::api::EncodeStruct(again) != once) std::abort();
  if (!(again == obj)) std::abort();
  // Text encoding writes the same document as the tree encoder.
  if (Json::parse(kvol::api::EncodeJsonText(again)) != once) std::abort();
  // Decoding the text straight gives what parsing and decoding it gives, or declines.
  const std::string text = kvol::api::DumpJson(doc);
  T fast;
  if (kvol::api::DecodeJsonText(text, fast)) {
    auto tree = kvol::api::ParseJson(text);
    if (!tree.ok()) std::abort();
    kvol::api::FieldErrors slow_errors;
    T slow = kvol::api::DecodeStruct<T>(*tree, &slow_errors);
    if (!slow_errors.empty() || !(slow == fast)) std::abort();
  }
  kvol::api::SetDefaults(again);
  (void)kvol::api::Validate(again);
  (void)kvol::api::ValidateUpdate(again, obj);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  kvol::manifest::ReadResult r = kvol::manifest::ParseText(text, "fuzz");
  for (const auto& e : r.errors) (void)e.ToString();
  for (const auto& doc : r.documents) {
    kvol::api::DocumentReport report = kvol::api::CheckDocument(doc.object);
    (void)kvol::api::AggregateMessage(report.errors);
    const std::string kind = doc.object.is_object() && doc.object.contains("kind") &&
                                     doc.object["kind"].is_string()
                                 ? doc.object["kind"].get<std::string>()
                                 : "";
    kvol::api::ForEachKind([&](auto t) {
      using T = typename decltype(t)::type;
      if (kvol::api::KindInfoOf<T>().kind == kind) CheckStableEncoding<T>(doc.object);
    });
  }

  // The bytes as JSON text: the straight decoder agrees with parse + decode, or declines.
  {
    kvol::api::PersistentVolume fast;
    if (kvol::api::DecodeJsonText(text, fast)) {
      auto tree = kvol::api::ParseJson(text);
      if (!tree.ok()) std::abort();
      kvol::api::FieldErrors errors;
      auto slow = kvol::api::DecodeStruct<kvol::api::PersistentVolume>(*tree, &errors);
      if (!errors.empty() || !(slow == fast)) std::abort();
    }
  }

  if (size <= 512) {
    auto q = kvol::api::Quantity::Parse(text);
    if (q.ok()) {
      // The canonical string parses back to the same value and the same string.
      auto again = kvol::api::Quantity::Parse(q->ToString());
      if (!again.ok() || !(*again == *q) || again->ToString() != q->ToString()) std::abort();
    }
    auto sel = kvol::api::labels::Parse(text);
    if (sel.ok()) {
      auto again = kvol::api::labels::Parse(sel->ToString());
      if (!again.ok() || again->ToString() != sel->ToString()) std::abort();
    }
    auto fs = kvol::api::fields::Parse(text);
    if (fs.ok()) (void)fs->ToString();
    (void)kvol::api::Time::Parse(text);
  }
  return 0;
}
