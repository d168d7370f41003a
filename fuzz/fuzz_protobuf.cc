// libFuzzer target: arbitrary bytes as a Kubernetes protobuf request body. Decoding either fails
// with an error or yields an object whose JSON text can be written and read back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/codec.h"
#include "api/protobuf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  auto j = kvol::api::DecodeProtobufObject(body);
  if (j.ok()) {
    if (!j->is_object() || !j->contains("kind") || !j->contains("apiVersion")) std::abort();
    auto back = kvol::api::ParseJson(kvol::api::DumpJson(*j));
    if (!back.ok() || *back != *j) std::abort();
  }
  return 0;
}
