// Checkpoint and DB ops with Caffe2's names, arguments and defaults:
//   CreateDB  -> a DBReader blob over an existing DB
//   DBExists  -> a bool scalar
//   Save      blobs -> a DB (minidb or lmdb), chunked as Caffe2 does
//   Load      a DB (or DBReader inputs) -> blobs
//
// Three guarantees Caffe2 does not give:
// - Save writes a temporary DB beside the target (fsyncing its files and
//   directory) and renames it into place only once everything is written
//   and synced, then fsyncs the target's directory, so an interrupted or
//   failed Save never damages the previous checkpoint.
// - Save appends a CRC-32C to every record (core/serialization_checksum.h;
//   Caffe2 readers ignore it) and Load verifies it, so a flipped byte in a
//   minidb file or an LMDB is an error naming the blob and the file instead
//   of silently different weights.
// - Load is all-or-nothing: it reads every wanted record, checks that every
//   blob and every chunk is present and consistent, deserializes into
//   temporaries, and only then swaps them into the workspace. A corrupt or
//   incomplete file leaves every blob as it was.
//
// Paths: operators/db_path.h. With absolute_path=0 (Caffe2's default) a
// relative path is relative to the workspace's root folder and may not leave
// it, and Load and Save open and rename inside the directory they checked
// (a symbolic link swapped in afterwards is not followed); absolute_path=1
// uses the path as given. Save first removes temporaries that killed Saves
// of the same target left (operators/atomic_path.h).
//
// Fault injection, for tests only: the environment variable
// DOPPIO_FAULT_INJECT makes every Save of the process fail at a chosen point
// as a crash would, without any clean-up:
//   save_after_bytes:N        once more than N bytes of records (keys and
//                             values) are written to the temporary DB, flush
//                             them and SIGKILL the process
//   save_stall_after_bytes:N  the same, but stop there (sleeping, for at most
//                             60 s, then SIGKILL) so a test can kill the
//                             process from outside at a known point
//   save_before_rename        SIGKILL once the temporary DB is complete and
//                             synced, just before it would replace the target
// Any other value makes Save fail with an error. Unset, it costs one getenv
// per Save.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/db.h"
#include "core/operator.h"
#include "operators/db_path.h"
#include "proto/doppio.pb.h"

namespace doppio {

class CreateDBOp final : public Operator<CPUContext> {
 public:
  CreateDBOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string db_type_;
  std::string db_name_;
  bool absolute_path_;
  int num_shards_;
  int shard_id_;
};

class DBExistsOp final : public Operator<CPUContext> {
 public:
  DBExistsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string db_name_;
  std::string db_type_;
  bool absolute_path_;
};

class SaveOp final : public Operator<CPUContext> {
 public:
  SaveOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Writes every input into a new DB `name` in where's directory;
  // `after_record` sees the running count of bytes written after each record.
  void WriteDB(const DBLocation& where, const std::string& name,
               const std::function<void(int64_t bytes_written)>& after_record);
  // The `segments` argument: serialized TensorProtos naming an input, with
  // the whole tensor's dims and the segment the input holds.
  void ParseSegments(const std::vector<std::string>& encoded);

  std::string db_name_;
  bool absolute_path_;
  std::string db_type_;
  std::string strip_prefix_;
  // The name each input is saved under.
  std::vector<std::string> blob_names_;
  int64_t chunk_size_;
  // Input index -> the whole tensor it is a block of (`segments`): its dims
  // and the first element of the block.
  struct Segment {
    std::vector<int64_t> whole_dims;
    int64_t begin = 0;
    int64_t end = 0;
  };
  std::map<int, Segment> segments_;
};

class LoadOp final : public Operator<CPUContext> {
 public:
  LoadOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // The records of one blob, gathered before anything is deserialized.
  struct Gathered {
    std::vector<BlobProto> chunks;
    std::vector<std::string> keys;
    int db_index = -1;
    // The DB(s) it came from, for messages.
    std::string source;
    bool all_segments = true;
  };
  using GatheredBlobs = std::map<std::string, Gathered>;

  // Reads the wanted records from `cursor` (db number db_index, called
  // `source` in messages) into `gathered`, verifying their checksums. With
  // `stop_when_found` (a DBReader input, as in Caffe2) it stops at the
  // record completing the last wanted blob, leaving the cursor there: a
  // second Load over the same reader continues from that point (how a
  // predictor export reads its MetaNetDef, then the parameters after it).
  void Gather(db::Cursor* cursor, int db_index, const std::string& source, GatheredBlobs* gathered,
              bool stop_when_found) const;
  // Every wanted blob gathered whole.
  bool AllFound(const GatheredBlobs& gathered) const;
  // The workspace name a db key loads into.
  std::string BlobNameFromKey(const std::string& key) const;
  // Errors when a requested blob is absent, unless allow_incomplete.
  void CheckComplete(const GatheredBlobs& gathered, const std::string& sources) const;

  bool absolute_path_;
  std::string add_prefix_;
  std::string strip_prefix_;
  std::vector<std::string> db_names_;
  std::string db_type_;
  bool keep_device_;
  bool load_all_;
  bool allow_incomplete_;
  // Names in the db (after the prefix rules) -> output index.
  std::map<std::string, int> output_index_;
  std::vector<std::string> source_names_;
};

}  // namespace doppio
