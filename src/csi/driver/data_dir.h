// The bundled CSI driver's data directory: each volume a sparse file of its size, each snapshot
// a copy of one, and a record of each in one log (RecordLog). A record is written only after its
// file is complete, and removed before its file is, so a crash leaves either a whole volume or a
// file that the next start removes. A volume made empty is its record alone until its first use
// (published, snapshotted, cloned): its file, all zeroes, is made then (MakeFile), so that
// provisioning a volume costs one record and no inode.
//
//   <dir>/volumes/<id>.img   <dir>/snapshots/<id>.img   <dir>/records.log
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "csi/driver/record_log.h"
#include "os/exec.h"

namespace kvol::csi::driver {

struct VolumeRecord {
  std::string id;
  std::string name;  // CreateVolume's name: creating it again answers the same volume
  int64_t capacity = 0;
  std::string source_snapshot;  // what its contents came from, if anything
  std::string source_volume;
  std::map<std::string, std::string> parameters;
  bool file_pending = false;  // made empty and not yet used: no file until MakeFile
};

struct SnapshotRecord {
  std::string id;
  std::string name;
  std::string source_volume;
  int64_t size = 0;
  int64_t created_unix_nanos = 0;
};

// Where a new volume's contents come from: nothing, a snapshot, or another volume.
struct ContentSource {
  std::string snapshot;
  std::string volume;
};

class DataDir {
 public:
  // Opens (creating) `dir`, reading its records and removing files that have none.
  static StatusOr<std::unique_ptr<DataDir>> Open(const std::string& dir, os::Exec& exec);

  std::optional<VolumeRecord> VolumeById(const std::string& id) const;
  std::optional<VolumeRecord> VolumeByName(const std::string& name) const;
  // Every volume, by id.
  std::vector<VolumeRecord> Volumes() const;
  std::string VolumeFile(const std::string& id) const;
  // Whether `path` (as the kernel reports a loop device's file) is one of this directory's
  // volumes.
  bool Owns(const std::string& path) const;

  // A new volume of `capacity` bytes holding `source`'s contents. NotFound when the source is
  // not there; OutOfRange when it is larger than `capacity`. Creates of one name are the
  // caller's to serialize; creates of different names run in parallel.
  StatusOr<VolumeRecord> CreateVolume(const std::string& name, int64_t capacity,
                                      const ContentSource& source,
                                      std::map<std::string, std::string> parameters);
  // Makes the file of a volume whose file is pending, before its first use; a volume with its
  // file already is left as it is. NotFound when the volume is not there.
  Status MakeFile(const std::string& id);
  // Whether the volume's contents are where they should be: its file, unless still pending.
  bool Present(const VolumeRecord& v) const;
  // Removes a volume; one that is not there is already removed.
  Status DeleteVolume(const std::string& id);
  // Grows a volume's file to `capacity` (never shrinks it); the record as it now is.
  StatusOr<VolumeRecord> GrowVolume(const std::string& id, int64_t capacity);

  std::optional<SnapshotRecord> SnapshotById(const std::string& id) const;
  std::optional<SnapshotRecord> SnapshotByName(const std::string& name) const;
  std::vector<SnapshotRecord> Snapshots() const;
  // A copy of volume `source`'s file as it is now. NotFound when the volume is not there.
  StatusOr<SnapshotRecord> CreateSnapshot(const std::string& name, const std::string& source);
  Status DeleteSnapshot(const std::string& id);

  // Free bytes of the filesystem holding the directory, as an unprivileged user may use them.
  StatusOr<int64_t> AvailableBytes() const;

 private:
  DataDir(std::string dir, os::Exec& exec) : dir_(std::move(dir)), exec_(exec) {}
  Status Load();
  // Moves records kept in files of their own (<id>.json, as earlier versions wrote them) into
  // the log.
  Status MoveRecordFilesToLog();
  std::string SnapshotFile(const std::string& id) const;
  // Removes the record of `id` under `sub` ("volumes", "snapshots"), then its file; mu_ held.
  template <class Records>
  Status RemoveRecorded(Records& records, const char* sub, const std::string& id);
  // Copies `from` to `to` sharing blocks where the filesystem can (reflink), sparse otherwise.
  Status CopyFile(const std::string& from, const std::string& to);
  // MakeFile with mu_ held.
  Status MakeFileLocked(VolumeRecord& v);

  const std::string dir_;
  std::string real_volumes_;  // <dir>/volumes/ with symbolic links resolved
  os::Exec& exec_;
  std::unique_ptr<RecordLog> log_;
  mutable std::mutex mu_;  // the records; held across a copy from a source, so that it stays
  std::map<std::string, VolumeRecord> volumes_;
  std::map<std::string, std::string> volume_names_;  // name → id
  std::map<std::string, SnapshotRecord> snapshots_;
};

// A new random identifier: `prefix` and 16 hex digits.
std::string NewId(const std::string& prefix);

}  // namespace kvol::csi::driver
