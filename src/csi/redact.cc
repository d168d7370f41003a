// StripSecrets: a copy of the message with each csi_secret field's values replaced, walked by
// reflection so that a message added to the proto later is covered without code here.
#include "csi/redact.h"

#include <google/protobuf/descriptor.h>

#include <memory>

#include "csi/proto/csi.pb.h"

namespace kvol::csi {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void Strip(Message& m) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const bool secret = f->options().GetExtension(::csi::v1::csi_secret);
    if (f->is_map()) {
      // Entries are messages of a key and a value; a secret map keeps its keys (which say
      // what was passed) and loses its values.
      const FieldDescriptor* value = f->message_type()->map_value();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        Message* entry = r->MutableRepeatedMessage(&m, f, i);
        if (secret && value->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          entry->GetReflection()->SetString(entry, value, kStripped);
        } else if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          Strip(*entry);
        }
      }
    } else if (secret) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING && !f->is_repeated()) {
        r->SetString(&m, f, kStripped);
      } else {
        r->ClearField(&m, f);
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) Strip(*r->MutableRepeatedMessage(&m, f, i));
      } else {
        Strip(*r->MutableMessage(&m, f));
      }
    }
  }
}

}  // namespace

std::string StripSecrets(const Message& m) {
  std::unique_ptr<Message> copy(m.New());
  copy->CopyFrom(m);
  Strip(*copy);
  return copy->ShortDebugString();
}

}  // namespace kvol::csi
