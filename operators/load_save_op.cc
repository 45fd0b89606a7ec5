#include "operators/load_save_op.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "core/db_minidb.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/serialization.h"
#include "core/serialization_checksum.h"
#include "core/workspace.h"
#include "operators/atomic_path.h"
#include "operators/db_path.h"

namespace doppio {
namespace {

// Caffe2's Save chunk_size argument: -1 (the default) means the default
// chunk size and 0 means one chunk per blob. (The C++ API spells "no
// chunking" kNoChunking.)
int64_t ChunkSizeFromArgument(int64_t argument) {
  if (argument == -1) return kDefaultChunkSize;
  if (argument == 0) return kNoChunking;
  DOPPIO_ENFORCE(argument > 0, "Save: chunk_size must be positive, 0 (no chunking) or -1 "
                 "(default); got ", argument);
  return argument;
}

// Caffe2's prefix rule: drop everything up to and including the first
// occurrence of `prefix`; names without it are kept whole.
std::string StripPrefix(const std::string& name, const std::string& prefix) {
  if (prefix.empty()) return name;
  const size_t at = name.find(prefix);
  return at == std::string::npos ? name : name.substr(at + prefix.size());
}

// DOPPIO_FAULT_INJECT, as load_save_op.h describes it.
struct SaveFault {
  enum Kind { kNone, kKillAfterBytes, kStallAfterBytes, kKillBeforeRename };
  Kind kind = kNone;
  int64_t bytes = 0;

  static SaveFault FromEnvironment() {
    SaveFault fault;
    const char* setting = std::getenv("DOPPIO_FAULT_INJECT");
    if (setting == nullptr || *setting == '\0') return fault;
    const std::string text = setting;
    const auto with_bytes = [&](const std::string& prefix, Kind kind) {
      if (text.compare(0, prefix.size(), prefix) != 0) return false;
      const std::string number = text.substr(prefix.size());
      char* end = nullptr;
      const long long value = std::strtoll(number.c_str(), &end, 10);
      DOPPIO_ENFORCE(!number.empty() && *end == '\0' && value >= 0,
                     "Save: DOPPIO_FAULT_INJECT='", text, "' needs a byte count >= 0 after '",
                     prefix, "'");
      fault.kind = kind;
      fault.bytes = value;
      return true;
    };
    if (text == "save_before_rename") {
      fault.kind = kKillBeforeRename;
    } else if (!with_bytes("save_after_bytes:", kKillAfterBytes) &&
               !with_bytes("save_stall_after_bytes:", kStallAfterBytes)) {
      DOPPIO_THROW("Save: DOPPIO_FAULT_INJECT='", text, "' is not understood (known: "
                   "save_after_bytes:N, save_stall_after_bytes:N, save_before_rename; "
                   "it is for tests only)");
    }
    return fault;
  }

  bool DueAfter(int64_t bytes_written) const {
    return (kind == kKillAfterBytes || kind == kStallAfterBytes) && bytes_written > bytes;
  }

  // Ends the process the way a crash or `kill -9` would: no destructors, no
  // clean-up of the temporary DB.
  [[noreturn]] void Crash() const {
    if (kind == kStallAfterBytes) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();
  }
};

// Opens the db at `where` for Load. A minidb file is opened inside the held
// directory, without following a link at its name when the path was
// confined (its checked path has every link resolved); backends that open
// by name (liblmdb) get the path after a last check that it still leads to
// the held directory.
std::unique_ptr<db::DB> OpenForLoad(const std::string& db_type, const CheckedDBPath& checked,
                                    const DBLocation& where) {
  if (!db::IsMiniDBType(db_type)) {
    // Before and after: a swap while liblmdb opens is caught too, unless it
    // is swapped back before the second look.
    where.EnforceDirectoryUnchanged("Load", checked.path);
    std::unique_ptr<db::DB> opened = db::OpenDB(db_type, checked.path, db::READ);
    where.EnforceDirectoryUnchanged("Load", checked.path);
    return opened;
  }
  const int no_follow = checked.confined ? O_NOFOLLOW : 0;
  const int fd = ::openat(where.directory(), where.name().c_str(),
                          O_RDONLY | O_NONBLOCK | O_CLOEXEC | no_follow);
  const int error = errno;
  DOPPIO_ENFORCE(fd >= 0, "Load: cannot open minidb file '", checked.path, "': ",
                 std::strerror(error),
                 error == ELOOP ? " (a symbolic link swapped in after the path was checked "
                                  "is not followed)"
                                : "");
  return db::OpenMiniDBOnDescriptor(fd, checked.path, db::READ);
}

}  // namespace

// ---- CreateDB ----

CreateDBOp::CreateDBOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      db_type_(GetSingleArgument<std::string>("db_type", "leveldb")),
      db_name_(GetSingleArgument<std::string>("db", "")),
      absolute_path_(GetSingleArgument<int>("absolute_path", 0) != 0),
      num_shards_(GetSingleArgument<int>("num_shards", 1)),
      shard_id_(GetSingleArgument<int>("shard_id", 0)) {
  DOPPIO_ENFORCE(!db_name_.empty(), "CreateDB: argument 'db' (the db's path) is required");
}

void CreateDBOp::RunOnDevice() {
  const std::string path = ResolveDBPath("CreateDB", db_name_, absolute_path_,
                                        workspace()->RootFolder(), AbsolutePathPolicy::kAsGiven);
  OutputAs<db::DBReader>(0)->Open(db_type_, path, num_shards_, shard_id_);
}

// ---- DBExists ----

DBExistsOp::DBExistsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      db_name_(GetSingleArgument<std::string>("db_name", "")),
      db_type_(GetSingleArgument<std::string>("db_type", "")),
      absolute_path_(GetSingleArgument<int>("absolute_path", 0) != 0) {}

void DBExistsOp::RunOnDevice() {
  const std::string path =
      ResolveDBPath("DBExists", db_name_, absolute_path_, workspace()->RootFolder());
  Tensor* exists = Output(0);
  exists->Resize({});
  *exists->mutable_data<bool>() = db::DBExists(db_type_, path);
}

// ---- Save ----

SaveOp::SaveOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      db_name_(GetSingleArgument<std::string>("db", "")),
      absolute_path_(GetSingleArgument<int>("absolute_path", 0) != 0),
      db_type_(GetSingleArgument<std::string>("db_type", "")),
      strip_prefix_(GetSingleArgument<std::string>("strip_prefix", "")),
      blob_names_(GetRepeatedArgument<std::string>("blob_name_overrides")),
      chunk_size_(ChunkSizeFromArgument(GetSingleArgument<int64_t>("chunk_size", -1))) {
  DOPPIO_ENFORCE(!db_type_.empty(), "Save: argument 'db_type' is required (e.g. \"minidb\")");
  DOPPIO_ENFORCE(!db_name_.empty(), "Save: argument 'db' (the output path) is required");
  DOPPIO_ENFORCE(blob_names_.empty() || static_cast<int>(blob_names_.size()) == InputSize(),
                 "Save: blob_name_overrides has ", blob_names_.size(), " names for ",
                 InputSize(), " inputs");
  DOPPIO_ENFORCE(blob_names_.empty() || strip_prefix_.empty(),
                 "Save: strip_prefix and blob_name_overrides are mutually exclusive");
  if (blob_names_.empty()) {
    for (int i = 0; i < InputSize(); ++i) {
      blob_names_.push_back(StripPrefix(input_name(i), strip_prefix_));
    }
  }
  std::set<std::string> seen;
  for (const std::string& name : blob_names_) {
    DOPPIO_ENFORCE(!name.empty(), "Save: a blob would be saved under an empty name");
    DOPPIO_ENFORCE(seen.insert(name).second, "Save: two inputs would be saved as '", name, "'");
  }
  ParseSegments(GetRepeatedArgument<std::string>("segments"));
}

void SaveOp::ParseSegments(const std::vector<std::string>& encoded) {
  std::map<std::string, int> input_index;
  for (int i = 0; i < InputSize(); ++i) input_index.emplace(input_name(i), i);
  for (const std::string& bytes : encoded) {
    TensorProto proto;
    DOPPIO_ENFORCE(proto.ParseFromString(bytes), "Save: an entry of 'segments' is not a "
                   "serialized TensorProto");
    auto input = input_index.find(proto.name());
    DOPPIO_ENFORCE(input != input_index.end(), "Save: 'segments' names '", proto.name(),
                   "', which is not an input");
    DOPPIO_ENFORCE(proto.has_segment(), "Save: the 'segments' entry of '", proto.name(),
                   "' has no segment");
    Segment segment;
    segment.whole_dims.assign(proto.dims().begin(), proto.dims().end());
    segment.begin = proto.segment().begin();
    segment.end = proto.segment().end();
    DOPPIO_ENFORCE(segments_.emplace(input->second, std::move(segment)).second, "Save: "
                   "'segments' describes '", proto.name(), "' twice");
  }
}

void SaveOp::WriteDB(const DBLocation& where, const std::string& name,
                     const std::function<void(int64_t bytes_written)>& after_record) {
  const std::string path = where.SiblingPath(name);
  std::unique_ptr<db::DB> out;
  if (db::IsMiniDBType(db_type_)) {
    // O_EXCL: a file (or a link) already under this fresh name is not
    // written through.
    const int fd = ::openat(where.directory(), name.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    const int error = errno;
    DOPPIO_ENFORCE(fd >= 0, "Save: cannot create '", path, "': ", std::strerror(error));
    out = db::OpenMiniDBOnDescriptor(fd, path, db::NEW);
  } else {
    // liblmdb creates its directory by name.
    where.EnforceDirectoryUnchanged("Save", path);
    out = db::OpenDB(db_type_, path, db::NEW);
  }
  std::unique_ptr<db::Transaction> transaction = out->NewTransaction();
  int64_t bytes_written = 0;
  const SerializationAcceptor acceptor = [&](const std::string& key,
                                             const std::string& value) {
    const std::string record = AppendRecordChecksum(key, value);
    transaction->Put(key, record);
    bytes_written += static_cast<int64_t>(key.size() + record.size());
    if (after_record) {
      // What is written so far reaches the file before a fault strikes.
      transaction->Commit();
      after_record(bytes_written);
    }
  };
  for (int i = 0; i < InputSize(); ++i) {
    try {
      auto segment = segments_.find(i);
      if (segment != segments_.end()) {
        const Tensor& block = Input(i);
        DOPPIO_ENFORCE(block.numel() == segment->second.end - segment->second.begin,
                       "it holds ", block.numel(), " elements but is described as elements [",
                       segment->second.begin, ", ", segment->second.end, ") of a tensor of dims ",
                       segment->second.whole_dims);
        SerializeTensorSegment(block, blob_names_[i], segment->second.whole_dims,
                               segment->second.begin, acceptor, chunk_size_);
        continue;
      }
      SerializeBlob(InputBlob(i), blob_names_[i], acceptor, chunk_size_);
    } catch (Error& error) {
      error.AppendContext(
          input_name(i) == blob_names_[i]
              ? MakeString("while saving blob '", input_name(i), "'")
              : MakeString("while saving blob '", input_name(i), "' as '", blob_names_[i], "'"));
      throw;
    }
  }
  transaction->Commit();
  transaction.reset();
  out->Close();
}

void SaveOp::RunOnDevice() {
  const CheckedDBPath checked =
      CheckDBPath("Save", db_name_, absolute_path_, workspace()->RootFolder());
  const std::string& target = checked.path;
  const DBLocation where = OpenDBLocation("Save", checked);
  const SaveFault fault = SaveFault::FromEnvironment();
  std::function<void(int64_t)> after_record;
  if (fault.kind != SaveFault::kNone) {
    after_record = [&fault](int64_t bytes_written) {
      if (fault.DueAfter(bytes_written)) fault.Crash();
    };
  }
  // Before this Save adds its own: a killed Save's temporary may be as large
  // as the checkpoint, and nothing else would ever remove it.
  RemoveStaleTemporarySiblingsAt(where.directory(), where.name());
  const std::string temporary_name = TemporarySiblingName(where.name());
  const std::string temporary = where.SiblingPath(temporary_name);
  try {
    WriteDB(where, temporary_name, after_record);
    SyncAt(where.directory(), temporary_name, temporary);
    if (fault.kind == SaveFault::kKillBeforeRename) fault.Crash();
    ReplaceAt(where.directory(), temporary_name, where.name(), target);
  } catch (Error& error) {
    RemoveQuietlyAt(where.directory(), temporary_name);
    error.AppendContext(MakeString("while saving ", InputSize(), " blob(s) to ", db_type_,
                                   " '", target, "' (the previous file there, if any, "
                                   "is unchanged)"));
    throw;
  } catch (...) {
    RemoveQuietlyAt(where.directory(), temporary_name);
    throw;
  }
}

// ---- Load ----

LoadOp::LoadOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      absolute_path_(GetSingleArgument<int>("absolute_path", 0) != 0),
      add_prefix_(GetSingleArgument<std::string>("add_prefix", "")),
      strip_prefix_(GetSingleArgument<std::string>("strip_prefix", "")),
      db_names_(GetRepeatedArgument<std::string>("dbs")),
      db_type_(GetSingleArgument<std::string>("db_type", "")),
      keep_device_(GetSingleArgument<int>("keep_device", 0) != 0),
      load_all_(GetSingleArgument<int>("load_all", 0) != 0),
      allow_incomplete_(GetSingleArgument<bool>("allow_incomplete", false)),
      source_names_(GetRepeatedArgument<std::string>("source_blob_names")) {
  if (InputSize() == 0) {
    DOPPIO_ENFORCE(!db_type_.empty(), "Load: argument 'db_type' is required (e.g. \"minidb\")");
    const std::string db_name = GetSingleArgument<std::string>("db", "");
    if (db_names_.empty()) {
      DOPPIO_ENFORCE(!db_name.empty(), "Load: argument 'db' (or 'dbs') is required");
      db_names_.push_back(db_name);
    } else {
      DOPPIO_ENFORCE(db_name.empty(), "Load: give either 'db' or 'dbs', not both");
      std::set<std::string> seen;
      for (const std::string& name : db_names_) {
        DOPPIO_ENFORCE(!name.empty(), "Load: 'dbs' holds an empty path");
        DOPPIO_ENFORCE(seen.insert(name).second, "Load: db '", name, "' is listed twice");
      }
    }
  }
  DOPPIO_ENFORCE(source_names_.empty() || static_cast<int>(source_names_.size()) == OutputSize(),
                 "Load: source_blob_names has ", source_names_.size(), " names for ",
                 OutputSize(), " outputs");
  DOPPIO_ENFORCE(source_names_.empty() || strip_prefix_.empty(),
                 "Load: strip_prefix and source_blob_names are mutually exclusive");
  DOPPIO_ENFORCE(source_names_.empty() || !load_all_,
                 "Load: load_all cannot be combined with source_blob_names");
  if (!load_all_) {
    if (source_names_.empty()) source_names_.assign(def.output().begin(), def.output().end());
    for (int i = 0; i < static_cast<int>(source_names_.size()); ++i) {
      DOPPIO_ENFORCE(output_index_.emplace(source_names_[i], i).second,
                     "Load: blob '", source_names_[i], "' is requested twice");
    }
  }
  // keep_device: blobs load into host tensors here whatever device they
  // were saved from; a device Load places them on its own device.
  (void)keep_device_;
}

std::string LoadOp::BlobNameFromKey(const std::string& key) const {
  return add_prefix_ + StripPrefix(BlobNameFromChunkKey(key), strip_prefix_);
}

namespace {

// Whether the records gathered for a blob hold all of it: an unchunked
// record, tensor segments as long as the tensor, or every content chunk.
bool HoldsWholeBlob(const std::vector<BlobProto>& chunks) {
  const BlobProto& first = chunks.front();
  if (first.has_tensor() && first.tensor().has_segment()) {
    int64_t numel = 1;
    for (int64_t dim : first.tensor().dims()) numel *= dim;
    int64_t covered = 0;
    for (const BlobProto& chunk : chunks) {
      covered += chunk.tensor().segment().end() - chunk.tensor().segment().begin();
    }
    return covered >= numel;
  }
  return static_cast<int64_t>(chunks.size()) >= std::max(1, first.content_num_chunks());
}

}  // namespace

void LoadOp::Gather(db::Cursor* cursor, int db_index, const std::string& source,
                    GatheredBlobs* gathered, bool stop_when_found) const {
  DOPPIO_ENFORCE(cursor != nullptr, "Load: the reader for '", source, "' is not open");
  // Save checksums every record, so one without a checksum beside ones with
  // it is a record whose checksum field itself was damaged.
  std::string with_checksum, without_checksum;
  for (; cursor->Valid(); cursor->Next()) {
    const std::string key = cursor->key();
    const std::string name = BlobNameFromKey(key);
    if (!load_all_ && !output_index_.count(name)) continue;
    DOPPIO_ENFORCE(!name.empty(), "Load: record '", key, "' of '", source,
                   "' names no blob");
    Gathered& blob = (*gathered)[name];
    const bool another_db = blob.db_index >= 0 && blob.db_index != db_index;
    blob.db_index = db_index;
    if (blob.source.empty()) {
      blob.source = source;
    } else if (another_db) {
      blob.source += "' and '" + source;
    }
    BlobProto proto;
    try {
      (ParseCheckedRecord(key, cursor->value(), &proto) ? with_checksum : without_checksum) = key;
      DOPPIO_ENFORCE(with_checksum.empty() || without_checksum.empty(), "record '",
                     without_checksum, "' carries no checksum although record '", with_checksum,
                     "' of the same db does (a damaged record?)");
    } catch (Error& error) {
      error.AppendContext(MakeString("while loading blob '", name, "' from ",
                                     db_type_.empty() ? "db" : db_type_, " '", source,
                                     "'; no blob was changed"));
      throw;
    }
    // A blob may span DBs only as segments (each shard's block of a
    // sharded optimizer state); DeserializeBlobChunks checks they tile it.
    const bool segment = proto.has_tensor() && proto.tensor().has_segment();
    DOPPIO_ENFORCE(!another_db || (segment && blob.all_segments), "Load: blob '", name,
                   "' is in both '", blob.source, "' (not as segments of one tensor)");
    blob.all_segments = blob.all_segments && segment;
    blob.chunks.push_back(std::move(proto));
    blob.keys.push_back(key);
    if (stop_when_found && !load_all_ && AllFound(*gathered)) return;
  }
}

bool LoadOp::AllFound(const GatheredBlobs& gathered) const {
  if (gathered.size() < output_index_.size()) return false;
  for (const auto& entry : gathered) {
    if (!HoldsWholeBlob(entry.second.chunks)) return false;
  }
  return true;
}

void LoadOp::CheckComplete(const GatheredBlobs& gathered, const std::string& sources) const {
  std::vector<std::string> missing;
  if (load_all_) {
    for (int i = 0; i < OutputSize(); ++i) {
      if (!gathered.count(output_name(i))) missing.push_back(output_name(i));
    }
  } else if (!allow_incomplete_) {
    for (const std::string& name : source_names_) {
      if (!gathered.count(name)) missing.push_back(name);
    }
  }
  DOPPIO_ENFORCE(missing.empty(), "Load: blob(s) ", missing, " not found in ", sources,
                 " (set allow_incomplete to load what is there)");
}

void LoadOp::RunOnDevice() {
  GatheredBlobs gathered;
  std::vector<std::string> sources;
  if (InputSize() > 0) {
    for (int i = 0; i < InputSize(); ++i) {
      const db::DBReader& reader = InputAs<db::DBReader>(i);
      sources.push_back(reader.source());
      Gather(reader.cursor(), i, reader.source(), &gathered, /*stop_when_found=*/true);
    }
  } else {
    for (int i = 0; i < static_cast<int>(db_names_.size()); ++i) {
      const CheckedDBPath checked =
          CheckDBPath("Load", db_names_[i], absolute_path_, workspace()->RootFolder());
      const std::string& path = checked.path;
      sources.push_back(path);
      std::unique_ptr<db::DB> in =
          OpenForLoad(db_type_, checked, OpenDBLocation("Load", checked));
      std::unique_ptr<db::Cursor> cursor = in->NewCursor();
      Gather(cursor.get(), i, path, &gathered, /*stop_when_found=*/false);
    }
  }
  CheckComplete(gathered, MakeString(sources));

  // Deserialize everything before touching the workspace.
  std::vector<std::pair<std::string, std::unique_ptr<Blob>>> staged;
  for (auto& entry : gathered) {
    Gathered& found = entry.second;
    auto blob = std::make_unique<Blob>();
    try {
      DeserializeBlobChunks(found.chunks, blob.get());
    } catch (Error& error) {
      error.AppendContext(MakeString("while loading blob '", entry.first, "' (keys ",
                                     found.keys, ") from ", db_type_.empty() ? "db" : db_type_,
                                     " '", found.source, "'; no blob was changed"));
      throw;
    }
    found.chunks.clear();
    found.chunks.shrink_to_fit();
    staged.emplace_back(entry.first, std::move(blob));
  }

  for (auto& entry : staged) {
    Blob* target = load_all_ ? workspace()->CreateBlob(entry.first)
                             : OutputBlob(output_index_.at(entry.first));
    target->Swap(*entry.second);
  }
}

REGISTER_CPU_OPERATOR(CreateDB, CreateDBOp);
REGISTER_CPU_OPERATOR(DBExists, DBExistsOp);
REGISTER_CPU_OPERATOR(Save, SaveOp);
REGISTER_CPU_OPERATOR(Load, LoadOp);

OPERATOR_SCHEMA(CreateDB)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("db", "(string, required) path of the db to read", true)
    .Arg("db_type", "(string, default \"leveldb\") the db's type: minidb or lmdb here")
    .Arg("absolute_path", "(int, default 0; not in Caffe2, whose CreateDB uses the path as "
         "given) 1: use the path as given; 0: an absolute path is used as given, a relative "
         "one is relative to the workspace's root folder and must not leave it")
    .Arg("num_shards", "(int, default 1) readers sharing the db")
    .Arg("shard_id", "(int, default 0) which of them this reader is")
    .Output(0, "reader", "a DBReader over the db, at its first record (of the shard)")
    .Doc("Opens an existing db for reading and keeps a DBReader in the output blob, "
         "for input ops and for Load.");

OPERATOR_SCHEMA(DBExists)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("absolute_path", "(int, default 0) 1: use the path as given; 0: a relative path is "
         "relative to the workspace's root folder and must not leave it")
    .Arg("db_name", "(string) path of the db in question")
    .Arg("db_type", "(string) its type: minidb or lmdb")
    .Output(0, "exists", "bool scalar: whether the db opens for reading")
    .Doc("Checks whether a db exists.");

OPERATOR_SCHEMA(Save)
    .NumInputs(1, INT_MAX)
    .NumOutputs(0)
    .Arg("absolute_path", "(int, default 0) 1: use the path as given; 0: a relative path is "
         "relative to the workspace's root folder and must not leave it")
    .Arg("strip_prefix", "(string, default \"\") in each input name, drop everything up to "
         "and including the first occurrence of this (e.g. \"gpu_0/\")")
    .Arg("blob_name_overrides", "(list of strings) names to save the inputs under, one per "
         "input; excludes strip_prefix")
    .Arg("db", "(string, required) the output path", true)
    .Arg("db_type", "(string, required) minidb or lmdb", true)
    .Arg("chunk_size", "(int, default -1) elements per chunk of a tensor: -1 means the "
         "default (1000000), 0 means one chunk per blob")
    .Arg("segments", "(strings, Doppio) serialized TensorProtos, one per input that is a "
         "block of a larger tensor: `name` the input, `dims` the whole tensor's, `segment` "
         "the elements [begin, end) the input holds. Such an input is saved as that segment "
         "of the whole (keys \"NAME#%BEGIN\"); Load given the DBs of every block assembles "
         "the whole tensor (a sharded optimizer state's checkpoint)")
    .Input(0, "X", "blobs to save (one or more: tensors, or types with a serializer)")
    .Doc("Saves blobs to a db, each under \"NAME#%CHUNK\" keys as Caffe2 does. The db is "
         "written beside the target and renamed into place when complete, so a failed or "
         "interrupted Save leaves the previous file intact. Each record carries a CRC-32C "
         "in a field Caffe2's readers ignore.");

OPERATOR_SCHEMA(Load)
    .NumInputs(0, INT_MAX)
    .NumOutputs(0, INT_MAX)
    .Arg("absolute_path", "(int, default 0) 1: use the path as given; 0: a relative path is "
         "relative to the workspace's root folder and must not leave it")
    .Arg("add_prefix", "(string, default \"\") prefix added to every name read from the db")
    .Arg("strip_prefix", "(string, default \"\") in every name read from the db, drop "
         "everything up to and including the first occurrence of this")
    .Arg("db", "(string) the db to load from, when there are no inputs")
    .Arg("dbs", "(list of strings) several dbs to load from; a blob is in one of them, or "
         "its segments are spread over several (Save's `segments`) and tile it")
    .Arg("db_type", "(string) minidb or lmdb; required without inputs")
    .Arg("keep_device", "(int, default 0) accepted for Caffe2; the CPU Load always loads "
         "into host tensors")
    .Arg("load_all", "(int, default 0) load every blob in the db(s), creating blobs as "
         "needed")
    .Arg("allow_incomplete", "(bool, default false) tolerate outputs missing from the db")
    .Arg("source_blob_names", "(list of strings) the db names to load into the outputs, "
         "one per output")
    .Input(0, "X, Y, ...", "optional DBReaders (from CreateDB) to load from instead of db")
    .Output(0, "blobs", "the blobs to load (with load_all: blobs that must be in the db)")
    .Doc("Loads blobs from one or more dbs. All or nothing: every record is read and "
         "checked (checksums where Save wrote them, all chunks present, shapes and types "
         "consistent) before any blob is changed, so a corrupt or incomplete file leaves the "
         "workspace as it was.");

NO_GRADIENT(CreateDB, "it opens a db reader; there is no tensor to differentiate");
SHOULD_NOT_DO_GRADIENT(DBExists, "it inspects the file system; it has no numeric inputs");
SHOULD_NOT_DO_GRADIENT(Save, "it writes blobs to a file and produces nothing to "
                       "differentiate");
NO_GRADIENT(Load, "its outputs come from a file, not from its inputs");

}  // namespace doppio
