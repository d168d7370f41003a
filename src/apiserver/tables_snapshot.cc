// Server-side printing of the snapshot.storage.k8s.io kinds: the additionalPrinterColumns of
// external-snapshotter's CRDs, computed as the API server does for a custom resource (a value
// that is absent is an empty cell; a date column shows how long ago).
#include "api/time.h"
#include "apiserver/tables.h"
#include "apiserver/tables_internal.h"

namespace kvol::apiserver::tables_internal {
namespace {

// The value at `path` as the cell shows it; null (an empty cell) when absent.
Json Cell(const Json& o, std::initializer_list<std::string_view> path) { return At(o, path); }

// A date column: how long ago, or an empty cell.
Json Since(const Json& o, std::initializer_list<std::string_view> path, os::WallTime now) {
  const std::string text = Str(o, path);
  auto t = api::Time::Parse(text);
  if (text.empty() || !t.ok()) return nullptr;
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch());
  return HumanDuration(std::chrono::seconds(secs.count() - t->unix_seconds()));
}

constexpr const char* kReadyToUseDesc =
    "Indicates if the snapshot is ready to be used to restore a volume.";

std::vector<Column> ClassColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Driver", "string", "", "", 0},
          {"DeletionPolicy", "string", "",
           "Determines whether a VolumeSnapshotContent created through the VolumeSnapshotClass "
           "should be deleted when its bound VolumeSnapshot is deleted.",
           0},
          {"Age", "date", "", kAgeDesc, 0}};
}

Json ClassCells(const Row& row) {
  return {row.name, Cell(row.o, {"driver"}), Cell(row.o, {"deletionPolicy"}), row.age};
}

std::vector<Column> SnapshotColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"ReadyToUse", "boolean", "", kReadyToUseDesc, 0},
      {"SourcePVC", "string", "",
       "If a new snapshot needs to be created, this contains the name of the source PVC from "
       "which this snapshot was (or will be) created.",
       0},
      {"SourceSnapshotContent", "string", "",
       "If a snapshot already exists, this contains the name of the existing "
       "VolumeSnapshotContent object representing the existing snapshot.",
       0},
      {"RestoreSize", "string", "",
       "Represents the minimum size of volume required to rehydrate from this snapshot.", 0},
      {"SnapshotClass", "string", "",
       "The name of the VolumeSnapshotClass requested by the VolumeSnapshot.", 0},
      {"SnapshotContent", "string", "",
       "Name of the VolumeSnapshotContent object to which the VolumeSnapshot object intends to "
       "bind to. Please note that verification of binding actually requires checking both "
       "VolumeSnapshot and VolumeSnapshotContent to ensure both are pointing at each other. "
       "Binding MUST be verified prior to usage of this object.",
       0},
      {"CreationTime", "date", "",
       "Timestamp when the point-in-time snapshot was taken by the underlying storage system.", 0},
      {"Age", "date", "", kAgeDesc, 0}};
}

Json SnapshotCells(const Row& row) {
  const Json& o = row.o;
  return {row.name,
          Cell(o, {"status", "readyToUse"}),
          Cell(o, {"spec", "source", "persistentVolumeClaimName"}),
          Cell(o, {"spec", "source", "volumeSnapshotContentName"}),
          Cell(o, {"status", "restoreSize"}),
          Cell(o, {"spec", "volumeSnapshotClassName"}),
          Cell(o, {"status", "boundVolumeSnapshotContentName"}),
          Since(o, {"status", "creationTime"}, row.now),
          row.age};
}

std::vector<Column> ContentColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"ReadyToUse", "boolean", "", kReadyToUseDesc, 0},
      {"RestoreSize", "integer", "", "Represents the complete size of the snapshot in bytes", 0},
      {"DeletionPolicy", "string", "",
       "Determines whether this VolumeSnapshotContent and its physical snapshot on the underlying "
       "storage system should be deleted when its bound VolumeSnapshot is deleted.",
       0},
      {"Driver", "string", "",
       "Name of the CSI driver used to create the physical snapshot on the underlying storage "
       "system.",
       0},
      {"VolumeSnapshotClass", "string", "",
       "Name of the VolumeSnapshotClass to which this snapshot belongs.", 0},
      {"VolumeSnapshot", "string", "",
       "Name of the VolumeSnapshot object to which this VolumeSnapshotContent object is bound.",
       0},
      {"VolumeSnapshotNamespace", "string", "",
       "Namespace of the VolumeSnapshot object to which this VolumeSnapshotContent object is "
       "bound.",
       0},
      {"Age", "date", "", kAgeDesc, 0}};
}

Json ContentCells(const Row& row) {
  const Json& o = row.o;
  return {row.name,
          Cell(o, {"status", "readyToUse"}),
          Cell(o, {"status", "restoreSize"}),
          Cell(o, {"spec", "deletionPolicy"}),
          Cell(o, {"spec", "driver"}),
          Cell(o, {"spec", "volumeSnapshotClassName"}),
          Cell(o, {"spec", "volumeSnapshotRef", "name"}),
          Cell(o, {"spec", "volumeSnapshotRef", "namespace"}),
          row.age};
}

constexpr Printer kSnapshotPrinters[] = {
    {"VolumeSnapshotClass", ClassColumns, ClassCells},
    {"VolumeSnapshot", SnapshotColumns, SnapshotCells},
    {"VolumeSnapshotContent", ContentColumns, ContentCells},
};

}  // namespace

const Printer* SnapshotPrinter(std::string_view kind) {
  for (const Printer& p : kSnapshotPrinters) {
    if (p.kind == kind) return &p;
  }
  return nullptr;
}

}  // namespace kvol::apiserver::tables_internal
