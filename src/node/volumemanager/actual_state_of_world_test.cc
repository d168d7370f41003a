// The actual state of the world: each row marks transitions on an empty state and reads back
// what it holds.
#include "node/volumemanager/actual_state_of_world.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace kvol::node::volumemanager {
namespace {

std::string State(MountState s) { return s == MountState::kMounted ? "mounted" : "uncertain"; }

// One line per item, in key order: what a row expects to find.
std::string Describe(const ActualStateOfWorld& w) {
  std::string out;
  w.ForEachVolume([&](const std::string& key, const ActualVolume& v) {
    out += "volume " + key + " " + State(v.state) + (v.reconstructed ? " reconstructed" : "") +
           (v.content_version.empty() ? "" : " @" + v.content_version) + "\n";
  });
  w.ForEachDevice([&](const std::string& name, const ActualDevice& d) {
    out += "device " + name + " " + State(d.state) + " at " + d.mount_path + "\n";
  });
  w.ForEachAttachment([&](const std::string& name, const ActualAttachment& a) {
    out +=
        "attachment " + name + (a.certain ? " certain" : " uncertain") + " " + a.device_path + "\n";
  });
  return out;
}

ActualVolume Volume(std::string uid, std::string dir, std::string content = "") {
  ActualVolume v;
  v.pod_uid = std::move(uid);
  v.plugin_name = "p";
  v.dir_name = std::move(dir);
  v.content_version = std::move(content);
  v.path = "/pods/" + v.pod_uid + "/" + v.dir_name;
  return v;
}

TEST(ActualStateOfWorld, Transitions) {
  struct Row {
    std::string name;
    std::function<void(ActualStateOfWorld&)> mark;
    std::string want;
  };
  const Row rows[] = {
      {.name = "a set-up volume is mounted",
       .mark = [](auto& w) { w.MarkVolumeMounted("a/p/x", Volume("a", "x", "5")); },
       .want = "volume a/p/x mounted @5\n"},
      {.name = "one that timed out is uncertain",
       .mark = [](auto& w) { w.MarkVolumeUncertain("a/p/x", Volume("a", "x")); },
       .want = "volume a/p/x uncertain\n"},
      {.name = "one that drifted becomes uncertain and keeps what it was",
       .mark =
           [](auto& w) {
             w.MarkVolumeMounted("a/p/x", Volume("a", "x", "5"));
             EXPECT_TRUE(w.MarkVolumeUncertain("a/p/x"));
           },
       .want = "volume a/p/x uncertain @5\n"},
      {.name = "only a recorded volume can drift",
       .mark = [](auto& w) { EXPECT_FALSE(w.MarkVolumeUncertain("a/p/x")); },
       .want = ""},
      {.name = "a reconstructed volume stays so until it is set up",
       .mark =
           [](auto& w) {
             ActualVolume v = Volume("a", "x");
             v.reconstructed = true;
             w.MarkVolumeUncertain("a/p/x", v);
             w.MarkVolumeUncertain("b/p/y", v);
             w.MarkVolumeMounted("b/p/y", Volume("b", "y"));
           },
       .want = "volume a/p/x uncertain reconstructed\nvolume b/p/y mounted\n"},
      {.name = "a torn-down volume is gone",
       .mark =
           [](auto& w) {
             w.MarkVolumeMounted("a/p/x", Volume("a", "x"));
             w.MarkVolumeUnmounted("a/p/x");
           },
       .want = ""},
      {.name = "a device is mounted, goes uncertain, and is unmounted",
       .mark =
           [](auto& w) {
             w.MarkDeviceMounted("p/d1", "p", "/g/d1");
             w.MarkDeviceMounted("p/d2", "p", "/g/d2");
             EXPECT_TRUE(w.MarkDeviceUncertain("p/d2"));
             EXPECT_FALSE(w.MarkDeviceUncertain("p/d3"));
             w.MarkDeviceUncertain("p/d4", "p", "/g/d4");
             w.MarkDeviceMounted("p/d5", "p", "/g/d5");
             w.MarkDeviceUnmounted("p/d5");
           },
       .want = "device p/d1 mounted at /g/d1\ndevice p/d2 uncertain at /g/d2\n"
               "device p/d4 uncertain at /g/d4\n"},
      {.name = "an attachment that failed half-way keeps the device it had",
       .mark =
           [](auto& w) {
             w.MarkAttached("p/v", "p", "v", "/dev/sdb");
             w.MarkAttachUncertain("p/v", "p", "v");
           },
       .want = "attachment p/v uncertain /dev/sdb\n"},
      {.name = "an attachment found on disk is uncertain with its recorded device",
       .mark = [](auto& w) { w.MarkAttachUncertain("p/v", "p", "v", "/dev/sdc"); },
       .want = "attachment p/v uncertain /dev/sdc\n"},
      {.name = "an attachment going away is uncertain, then detached",
       .mark =
           [](auto& w) {
             w.MarkAttached("p/v", "p", "v", "/dev/sdb");
             w.MarkAttached("p/w", "p", "w", "/dev/sdc");
             EXPECT_TRUE(w.MarkAttachUncertain("p/v"));
             EXPECT_FALSE(w.MarkAttachUncertain("p/none"));
             w.MarkDetached("p/w");
           },
       .want = "attachment p/v uncertain /dev/sdb\n"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ActualStateOfWorld w;
    row.mark(w);
    EXPECT_EQ(Describe(w), row.want);
  }
}

TEST(ActualStateOfWorld, QueriesAnswerWhatTheReconcilerAsks) {
  ActualStateOfWorld w;
  w.MarkVolumeMounted("a/p/x", Volume("a", "x", "5"));
  w.MarkVolumeUncertain("a/p/y", Volume("a", "y"));
  w.MarkDeviceMounted("p/x", "p", "/g/x");
  w.MarkDeviceUncertain("p/y", "p", "/g/y");
  w.MarkAttached("p/x", "p", "x", "/dev/x");
  w.MarkAttachUncertain("p/y", "p", "y", "/dev/y");

  EXPECT_TRUE(w.VolumeMountedAs("a/p/x", "5"));
  EXPECT_FALSE(w.VolumeMountedAs("a/p/x", "6")) << "contents changed";
  EXPECT_FALSE(w.VolumeMountedAs("a/p/y", "")) << "uncertain";
  EXPECT_FALSE(w.VolumeMountedAs("b/p/x", "5"));
  EXPECT_TRUE(w.DeviceMounted("p/x"));
  EXPECT_FALSE(w.DeviceMounted("p/y"));
  EXPECT_TRUE(w.Attached("p/x"));
  EXPECT_FALSE(w.Attached("p/y"));
  EXPECT_EQ(w.Attachment("p/y")->device_path, "/dev/y");
  EXPECT_EQ(w.Device("p/x")->mount_path, "/g/x");
  EXPECT_EQ(w.Volume("a/p/x")->path, "/pods/a/x");
  EXPECT_FALSE(w.Volume("a/p/z").has_value());

  EXPECT_TRUE(w.VolumeInUse("p/x"));
  EXPECT_FALSE(w.VolumeInUse("p/z"));
  EXPECT_FALSE(w.VolumeInUse("p/")) << "a prefix is not a name";
  EXPECT_TRUE(w.PodHasVolumes("a"));
  EXPECT_FALSE(w.PodHasVolumes("b"));
}

TEST(ActualStateOfWorld, ResizesAreKeptWhileAClaimAsks) {
  ActualStateOfWorld w;
  EXPECT_FALSE(w.ResizedTo("p/x").has_value());
  w.MarkResized("p/x", 2048);
  w.MarkResized("p/y", 4096);
  EXPECT_EQ(w.ResizedTo("p/x"), 2048);
  w.ForgetResizesExcept({"p/y"});
  EXPECT_FALSE(w.ResizedTo("p/x").has_value());
  EXPECT_EQ(w.ResizedTo("p/y"), 4096);
}

}  // namespace
}  // namespace kvol::node::volumemanager
