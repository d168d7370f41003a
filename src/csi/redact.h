// CSI messages as text for logs and errors, with secrets stripped: every field the CSI spec marks
// csi_secret (the secrets maps of the requests) shows "***stripped***" instead of its values,
// however deep it is nested.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace kvol::csi {

inline constexpr char kStripped[] = "***stripped***";

// `m` in protobuf's one-line text form, secrets stripped.
std::string StripSecrets(const google::protobuf::Message& m);

}  // namespace kvol::csi
