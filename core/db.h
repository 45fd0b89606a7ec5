// Key-value databases for checkpoints and datasets, as in Caffe2's
// caffe2/core/db.h: a DB opened in a Mode hands out Cursors (reading, in key
// or file order) and Transactions (writing). Backends register under type
// names ("minidb"/"MiniDB" in db_minidb.cc, "lmdb"/"LMDB" in db_lmdb.cc) and
// are opened with OpenDB.
//
// Every failure (unknown type, unopenable path, corrupt file, failed write)
// throws doppio::Error naming the DB's path.
//
// DBReader wraps a DB and a cursor so that an op (CreateDB) can keep it in a
// blob; it serializes as Caffe2's "DBReader" BlobProto (a DBReaderProto in
// `content`).
//
// Thread-safety: one DB, cursor or transaction is used by one thread at a
// time, except DBReader::Read and DBReader::SeekToFirst, which lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace doppio {
namespace db {

// READ: existing DB, cursors only. WRITE: existing DB (minidb appends).
// NEW: created, replacing a minidb file; an LMDB directory must not exist.
enum Mode { READ, WRITE, NEW };

class Cursor {
 public:
  Cursor() = default;
  virtual ~Cursor() = default;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  // Moves to `key`, or to the first key after it. Only where SupportsSeek().
  virtual void Seek(const std::string& key) = 0;
  virtual bool SupportsSeek() { return false; }
  virtual void SeekToFirst() = 0;
  virtual void Next() = 0;
  // The current record; only while Valid().
  virtual std::string key() = 0;
  virtual std::string value() = 0;
  // The same into `out`, reusing its storage: a reader copying every record
  // of a DB (DBReader::Read) then allocates nothing per record.
  virtual void CopyKeyTo(std::string* out) { *out = key(); }
  virtual void CopyValueTo(std::string* out) { *out = value(); }
  // False past the last record.
  virtual bool Valid() = 0;
};

class Transaction {
 public:
  Transaction() = default;
  virtual ~Transaction() = default;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  virtual void Put(const std::string& key, const std::string& value) = 0;
  // Makes the writes so far durable in the DB.
  virtual void Commit() = 0;
};

class DB {
 public:
  DB(const std::string& path, Mode mode) : path_(path), mode_(mode) {}
  virtual ~DB() = default;
  DB(const DB&) = delete;
  DB& operator=(const DB&) = delete;

  // Flushes and releases the DB; errors (a failed flush) throw. Cursors and
  // transactions must be gone first.
  virtual void Close() = 0;
  virtual std::unique_ptr<Cursor> NewCursor() = 0;
  virtual std::unique_ptr<Transaction> NewTransaction() = 0;

  const std::string& path() const { return path_; }
  Mode mode() const { return mode_; }

 protected:
  std::string path_;
  Mode mode_;
};

using DBCreator = std::function<std::unique_ptr<DB>(const std::string& path, Mode mode)>;

void RegisterDBType(const std::string& type, DBCreator creator);
// Registered type names, sorted.
std::vector<std::string> RegisteredDBTypes();

// Opens the DB of `type` at `path`. Unknown types fail listing the known
// ones; a path that cannot be opened fails naming it.
std::unique_ptr<DB> OpenDB(const std::string& type, const std::string& path, Mode mode);
// True when a DB of `type` opens for reading at `path`.
bool DBExists(const std::string& type, const std::string& path);

struct DBRegisterer {
  DBRegisterer(const char* type, DBCreator creator) {
    RegisterDBType(type, std::move(creator));
  }
};

// The DBCreator of a backend class constructed from (path, mode).
template <class Backend>
std::unique_ptr<DB> MakeDB(const std::string& path, Mode mode) {
  return std::make_unique<Backend>(path, mode);
}

// A DB plus a cursor, readable by several threads, optionally sharded (each
// reader of num_shards sees every num_shards-th record from shard_id).
class DBReader {
 public:
  DBReader() = default;
  DBReader(const std::string& db_type, const std::string& source,
           int32_t num_shards = 1, int32_t shard_id = 0);
  DBReader(const DBReader&) = delete;
  DBReader& operator=(const DBReader&) = delete;

  void Open(const std::string& db_type, const std::string& source,
            int32_t num_shards = 1, int32_t shard_id = 0);

  // The current record; then moves on, wrapping to the start at the end.
  void Read(std::string* key, std::string* value) const;
  void SeekToFirst() const;
  // The raw cursor: not thread-safe, for Load and serialization.
  Cursor* cursor() const { return cursor_.get(); }

  bool is_open() const { return db_ != nullptr; }
  const std::string& db_type() const { return db_type_; }
  const std::string& source() const { return source_; }
  int32_t num_shards() const { return static_cast<int32_t>(num_shards_); }
  int32_t shard_id() const { return static_cast<int32_t>(shard_id_); }

  // Where the readers' consumers stand, for checkpoints that resume exactly.
  // An input op that reads ahead (prefetch_op.h) has read past what the net
  // has seen, so the cursor is not the position to resume at; instead the op
  // counts the records it handed to the net here, the count is what a
  // checkpoint saves (DBReaderProto.records_consumed), and a reader loaded
  // from one asks its consumer to replay that many records from the start
  // (TakeReplay), through the consumer's own shuffle buffer, so that the
  // records that follow are the ones an uninterrupted run would have seen.
  // Thread-safe.
  // Const: the bookkeeping is the consumers', beside the reader's state.
  void AddConsumed(int64_t records) const { consumed_ += records; }
  int64_t consumed() const { return consumed_.load(); }
  // Records the consumer must read and drop before its next batch, once: the
  // first call returns them, later ones 0.
  int64_t TakeReplay() const { return replay_.exchange(0); }
  int64_t pending_replay() const { return replay_.load(); }
  void SetReplay(int64_t records) {
    replay_ = records;
    consumed_ = records;
  }
  // Differs between any two opened readers (and after Open): a consumer
  // holding batches read from another reader drops them.
  uint64_t generation() const { return generation_; }

 private:
  void MoveToBeginning() const;
  void EnforceOpen() const;

  std::string db_type_;
  std::string source_;
  std::unique_ptr<DB> db_;
  std::unique_ptr<Cursor> cursor_;
  uint32_t num_shards_ = 1;
  uint32_t shard_id_ = 0;
  mutable std::atomic<int64_t> consumed_{0};
  mutable std::atomic<int64_t> replay_{0};
  uint64_t generation_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace db
}  // namespace doppio
