// The built-in CSI resizer's tables: a claim and its volume -> whether the volume is to be grown,
// and a volume -> the ControllerExpandVolume request (or the error naming what is wrong).
#include "controller/resizer/expand_request.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace kvol::controller::resizer {
namespace {

namespace pb = ::csi::v1;

struct NeedRow {
  std::string name;
  std::string request = "2Gi";
  std::string pv_size = "1Gi";  // none when empty
  std::string claim_ref_uid = "u-1";
  std::string claim_ref_namespace = "default";
  std::string condition = "";  // a resize condition the claim has
  bool want;
};

TEST(VolumeNeedsResize, Table) {
  const NeedRow rows[] = {
      {.name = "smaller than the request", .want = true},
      {.name = "no size yet", .pv_size = "", .want = true},
      {.name = "grown, the claim still Resizing: finish by asking again",
       .pv_size = "2Gi",
       .condition = "Resizing",
       .want = true},
      {.name = "grown, the node's turn", .pv_size = "2Gi", .condition = "FileSystemResizePending",
       .want = false},
      {.name = "bigger than asked, the node's turn",
       .pv_size = "3Gi",
       .condition = "FileSystemResizePending",
       .want = false},
      {.name = "bound to another claim of that name", .claim_ref_uid = "u-0", .want = false},
      {.name = "bound to a claim in another namespace", .claim_ref_namespace = "other",
       .want = false},
      {.name = "not bound", .claim_ref_uid = "", .want = false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::PersistentVolumeClaim claim;
    claim.metadata.namespace_ = "default";
    claim.metadata.name = "data";
    claim.metadata.uid = "u-1";
    claim.spec.resources.requests["storage"] = api::Quantity::MustParse(row.request);
    if (!row.condition.empty()) {
      claim.status.conditions.push_back({.type = row.condition, .status = "True"});
    }
    api::PersistentVolume pv;
    pv.metadata.name = "pvc-u-1";
    if (!row.pv_size.empty()) pv.spec.capacity["storage"] = api::Quantity::MustParse(row.pv_size);
    if (!row.claim_ref_uid.empty()) {
      auto& ref = pv.spec.claim_ref.emplace();
      ref.uid = row.claim_ref_uid;
      ref.namespace_ = row.claim_ref_namespace;
      ref.name = "data";
    }
    EXPECT_EQ(VolumeNeedsResize(claim, pv), row.want);
  }
}

// The request, in a line: what the rows compare.
std::string Summary(const pb::ControllerExpandVolumeRequest& r) {
  std::string s = "id=" + r.volume_id() +
                  " required=" + std::to_string(r.capacity_range().required_bytes());
  const auto& c = r.volume_capability();
  s += c.has_block() ? " block:" : " mount(" + c.mount().fs_type() + "):";
  s += pb::VolumeCapability::AccessMode::Mode_Name(c.access_mode().mode());
  for (const auto& flag : c.mount().mount_flags()) s += " flag:" + flag;
  std::map<std::string, std::string> secrets(r.secrets().begin(), r.secrets().end());
  for (const auto& [k, v] : secrets) s += " secret:" + k + "=" + v;
  return s;
}

struct RequestRow {
  std::string name;
  bool csi = true;
  std::string handle = "vol-7";
  std::string fs_type = "xfs";
  std::string volume_mode = "";
  std::string access_mode = "ReadWriteOnce";
  std::vector<std::string> mount_options = {};
  std::map<std::string, std::string> secrets = {};
  bool multi_writer = false;
  std::string want;  // the Summary, or "error: <message>"
};

TEST(MakeExpandRequest, Table) {
  const RequestRow rows[] = {
      {.name = "a filesystem volume",
       .want = "id=vol-7 required=2147483648 mount(xfs):SINGLE_NODE_WRITER"},
      {.name = "mount options and secrets",
       .mount_options = {"noatime"},
       .secrets = {{"key", "s3cr3t"}},
       .want = "id=vol-7 required=2147483648 mount(xfs):SINGLE_NODE_WRITER flag:noatime "
               "secret:key=s3cr3t"},
      {.name = "a block volume",
       .volume_mode = "Block",
       .want = "id=vol-7 required=2147483648 block:SINGLE_NODE_WRITER"},
      {.name = "ReadWriteOnce as single-node multi-writer when the driver offers it",
       .multi_writer = true,
       .want = "id=vol-7 required=2147483648 mount(xfs):SINGLE_NODE_MULTI_WRITER"},
      {.name = "ReadWriteMany",
       .access_mode = "ReadWriteMany",
       .want = "id=vol-7 required=2147483648 mount(xfs):MULTI_NODE_MULTI_WRITER"},
      {.name = "not CSI", .csi = false, .want = "error: volume pv-1 is not a CSI volume"},
      {.name = "no handle",
       .handle = "",
       .want = "error: volume pv-1: spec.csi.volumeHandle is empty"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::PersistentVolume pv;
    pv.metadata.name = "pv-1";
    pv.spec.access_modes = {row.access_mode};
    pv.spec.mount_options = row.mount_options;
    if (!row.volume_mode.empty()) pv.spec.volume_mode = row.volume_mode;
    if (row.csi) {
      auto& csi = pv.spec.csi.emplace();
      csi.driver = "kvol.io/loop";
      csi.volume_handle = row.handle;
      csi.fs_type = row.fs_type;
    } else {
      pv.spec.host_path.emplace().path = "/srv/pv-1";
    }
    auto req = MakeExpandRequest(pv, 2147483648, row.secrets, row.multi_writer);
    EXPECT_EQ(req.ok() ? Summary(*req) : "error: " + req.status().message(), row.want);
  }
}

TEST(ExpandedSize, TheDriversAnswerOrWhatWasAsked) {
  pb::ControllerExpandVolumeResponse resp;
  EXPECT_EQ(ExpandedSize(resp, 100), 100) << "a driver that does not say";
  resp.set_capacity_bytes(4096);
  EXPECT_EQ(ExpandedSize(resp, 100), 4096) << "rounded up by the driver";
}

}  // namespace
}  // namespace kvol::controller::resizer
