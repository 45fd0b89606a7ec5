// Checkpoint and DB ops with Caffe2's names, arguments and defaults:
//   CreateDB  -> a DBReader blob over an existing DB
//   DBExists  -> a bool scalar
//   Save      blobs -> a DB (minidb or lmdb), chunked as Caffe2 does
//   Load      a DB (or DBReader inputs) -> blobs
//
// Two guarantees Caffe2 does not give:
// - Save writes a temporary DB beside the target and renames it into place
//   only once everything is written and synced, so an interrupted or failed
//   Save never damages the previous checkpoint.
// - Load is all-or-nothing: it reads every wanted record, checks that every
//   blob and every chunk is present and consistent, deserializes into
//   temporaries, and only then swaps them into the workspace. A corrupt or
//   incomplete file leaves every blob as it was.
//
// Paths: Caffe2 prefixes relative paths with the workspace's root folder
// unless absolute_path is set; Doppio workspaces have no root folder, so a
// relative path is relative to the current directory either way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/db.h"
#include "core/operator.h"
#include "proto/doppio.pb.h"

namespace doppio {

class CreateDBOp final : public Operator<CPUContext> {
 public:
  CreateDBOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string db_type_;
  std::string db_name_;
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
};

class SaveOp final : public Operator<CPUContext> {
 public:
  SaveOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Writes every input into a new DB at `path`.
  void WriteDB(const std::string& path);

  std::string db_name_;
  std::string db_type_;
  std::string strip_prefix_;
  // The name each input is saved under.
  std::vector<std::string> blob_names_;
  int64_t chunk_size_;
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
    std::string source;
  };
  using GatheredBlobs = std::map<std::string, Gathered>;

  // Reads the wanted records from `cursor` (db number db_index, called
  // `source` in messages) into `gathered`.
  void Gather(db::Cursor* cursor, int db_index, const std::string& source,
              GatheredBlobs* gathered) const;
  // The workspace name a db key loads into.
  std::string BlobNameFromKey(const std::string& key) const;
  // Errors when a requested blob is absent, unless allow_incomplete.
  void CheckComplete(const GatheredBlobs& gathered, const std::string& sources) const;

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
