// LMDB backend, with Caffe2's conventions: the path is a directory (made by
// NEW, which fails if it exists), a 1 TB map for writing (address space
// only; the file grows as needed), read-only environments for READ, keys in
// byte order.
//
// LMDB trusts its data file's internal structure, so an existing data.mdb
// is checked before LMDB maps it (db_lmdb_check.h): a damaged or foreign
// file is an Error naming it, not a crash inside liblmdb.
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/db.h"
#include "core/db_lmdb_check.h"
#include "core/enforce.h"

namespace doppio {
namespace db {
namespace {

constexpr size_t kLMDBMapSize = size_t{1} << 40;  // 1 TB, as Caffe2
constexpr size_t kSmallestLMDBMapSize = size_t{1} << 30;

void CheckMDB(int status, const std::string& path, const char* what) {
  DOPPIO_ENFORCE(status == MDB_SUCCESS, "lmdb '", path, "': ", what, " failed: ",
                 mdb_strerror(status));
}

class LMDBCursor final : public Cursor {
 public:
  LMDBCursor(MDB_env* env, const std::string& path) : path_(path) {
    CheckMDB(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn_), path_, "starting a read transaction");
    MDB_dbi dbi;
    int status = mdb_dbi_open(txn_, nullptr, 0, &dbi);
    if (status == MDB_SUCCESS) status = mdb_cursor_open(txn_, dbi, &cursor_);
    if (status != MDB_SUCCESS) {
      mdb_txn_abort(txn_);
      CheckMDB(status, path_, "opening a cursor");
    }
    try {
      SeekToFirst();
    } catch (...) {
      // The destructor does not run for a half-made cursor.
      mdb_cursor_close(cursor_);
      mdb_txn_abort(txn_);
      throw;
    }
  }
  ~LMDBCursor() override {
    mdb_cursor_close(cursor_);
    mdb_txn_abort(txn_);
  }

  void Seek(const std::string& key) override {
    if (key.empty()) {
      SeekToFirst();
      return;
    }
    key_.mv_size = key.size();
    key_.mv_data = const_cast<char*>(key.data());
    Position(MDB_SET_RANGE);
  }
  bool SupportsSeek() override { return true; }
  void SeekToFirst() override { Position(MDB_FIRST); }
  void Next() override {
    DOPPIO_ENFORCE(valid_, "Next() past the end of lmdb '", path_, "'");
    Position(MDB_NEXT);
  }
  std::string key() override {
    DOPPIO_ENFORCE(valid_, "no current record: lmdb '", path_, "' is exhausted");
    return std::string(static_cast<const char*>(key_.mv_data), key_.mv_size);
  }
  std::string value() override {
    DOPPIO_ENFORCE(valid_, "no current record: lmdb '", path_, "' is exhausted");
    return std::string(static_cast<const char*>(value_.mv_data), value_.mv_size);
  }
  void CopyKeyTo(std::string* out) override {
    DOPPIO_ENFORCE(valid_, "no current record: lmdb '", path_, "' is exhausted");
    out->assign(static_cast<const char*>(key_.mv_data), key_.mv_size);
  }
  void CopyValueTo(std::string* out) override {
    DOPPIO_ENFORCE(valid_, "no current record: lmdb '", path_, "' is exhausted");
    out->assign(static_cast<const char*>(value_.mv_data), value_.mv_size);
  }
  bool Valid() override { return valid_; }

 private:
  void Position(MDB_cursor_op op) {
    const int status = mdb_cursor_get(cursor_, &key_, &value_, op);
    valid_ = false;
    if (status == MDB_NOTFOUND) return;
    CheckMDB(status, path_, "reading a record");
    valid_ = true;
  }

  std::string path_;
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  MDB_val key_{0, nullptr};
  MDB_val value_{0, nullptr};
  bool valid_ = false;
};

class LMDBTransaction final : public Transaction {
 public:
  LMDBTransaction(MDB_env* env, const std::string& path, std::atomic<bool>* writer_busy)
      : env_(env), path_(path), writer_busy_(writer_busy) {
    // LMDB allows one write transaction per environment; a second one in
    // the same thread would wait for the first forever.
    DOPPIO_ENFORCE(!writer_busy_->exchange(true), "lmdb '", path_,
                   "' already has an open transaction; finish it first");
    try {
      Begin();
    } catch (...) {
      writer_busy_->store(false);
      throw;
    }
  }
  ~LMDBTransaction() override {
    // As in Caffe2, what was put is committed; errors cannot escape here
    // (call Commit to see them).
    if (txn_ != nullptr) mdb_txn_commit(txn_);
    writer_busy_->store(false);
  }

  void Put(const std::string& key, const std::string& value) override {
    DOPPIO_ENFORCE(txn_ != nullptr, "lmdb '", path_, "': the transaction failed earlier");
    MDB_val mdb_key{key.size(), const_cast<char*>(key.data())};
    MDB_val mdb_value{value.size(), const_cast<char*>(value.data())};
    const int status = mdb_put(txn_, dbi_, &mdb_key, &mdb_value, 0);
    DOPPIO_ENFORCE(status == MDB_SUCCESS, "lmdb '", path_, "': writing key '", key,
                   "' (", key.size(), " bytes) failed: ", mdb_strerror(status),
                   status == MDB_BAD_VALSIZE
                       ? MakeString(" (keys are limited to ", mdb_env_get_maxkeysize(env_),
                                    " bytes)")
                       : std::string());
  }

  void Commit() override {
    DOPPIO_ENFORCE(txn_ != nullptr, "lmdb '", path_, "': the transaction failed earlier");
    MDB_txn* txn = txn_;
    txn_ = nullptr;  // committed or failed, the handle is gone either way
    CheckMDB(mdb_txn_commit(txn), path_, "committing");
    Begin();
  }

 private:
  void Begin() {
    CheckMDB(mdb_txn_begin(env_, nullptr, 0, &txn_), path_, "starting a write transaction");
    const int status = mdb_dbi_open(txn_, nullptr, 0, &dbi_);
    if (status != MDB_SUCCESS) {
      mdb_txn_abort(txn_);
      txn_ = nullptr;
      CheckMDB(status, path_, "opening the database");
    }
  }

  MDB_env* env_;
  std::string path_;
  std::atomic<bool>* writer_busy_;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
};

class LMDB final : public DB {
 public:
  LMDB(const std::string& path, Mode mode) : DB(path, mode) {
    CheckMDB(mdb_env_create(&env_), path, "creating an environment");
    bool made_directory = false;
    try {
      // Writers reserve Caffe2's 1 TB of address space to grow into (see
      // OpenEnvironment). Readers ask for the least, which LMDB raises to the
      // size of the committed data: a static dataset or checkpoint needs no
      // more, whereas by default they would map what the writer reserved,
      // and a process with several readers open would map terabytes.
      CheckMDB(mdb_env_set_mapsize(env_, mode == READ ? 1 : kLMDBMapSize), path,
               "setting the map size");
      if (mode == NEW) {
        DOPPIO_ENFORCE(mkdir(path.c_str(), 0744) == 0, "cannot create lmdb directory '",
                       path, "': ", std::strerror(errno));
        made_directory = true;
      } else {
        CheckLMDBDataFile(path);
      }
      // MDB_NOTLS: read transactions belong to cursors, not threads, so one
      // thread may hold several cursors.
      const unsigned flags = (mode == READ ? MDB_RDONLY : 0) | MDB_NOTLS;
      OpenEnvironment(flags);
    } catch (...) {
      if (env_ != nullptr) mdb_env_close(env_);
      env_ = nullptr;
      if (made_directory) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
      throw;
    }
  }
  ~LMDB() override { Close(); }

  void Close() override {
    if (env_ != nullptr) {
      mdb_env_close(env_);
      env_ = nullptr;
    }
  }
  std::unique_ptr<Cursor> NewCursor() override {
    DOPPIO_ENFORCE(env_ != nullptr, "lmdb '", path_, "' is closed");
    return std::make_unique<LMDBCursor>(env_, path_);
  }
  std::unique_ptr<Transaction> NewTransaction() override {
    DOPPIO_ENFORCE(env_ != nullptr, "lmdb '", path_, "' is closed");
    DOPPIO_ENFORCE(mode_ != READ, "lmdb '", path_, "' was opened for reading only");
    return std::make_unique<LMDBTransaction>(env_, path_, &writer_busy_);
  }

 private:
  // Opens env_ (created, its map size set) at path_. A process that may
  // not map 1 TB (ulimit -v, ThreadSanitizer's smaller address space) gets
  // ENOMEM from the writer's mmap; it settles for the largest of a few
  // smaller maps that fits, which bounds the db's size instead.
  void OpenEnvironment(unsigned flags) {
    size_t map_size = kLMDBMapSize;
    for (;;) {
      const int status = mdb_env_open(env_, path_.c_str(), flags, 0664);
      if (status != ENOMEM || mode_ == READ || map_size <= kSmallestLMDBMapSize) {
        CheckMDB(status, path_, "opening (the path must be an lmdb directory)");
        return;
      }
      // A failed mdb_env_open leaves the handle usable only for closing.
      mdb_env_close(env_);
      env_ = nullptr;
      map_size /= 4;
      CheckMDB(mdb_env_create(&env_), path_, "creating an environment");
      CheckMDB(mdb_env_set_mapsize(env_, map_size), path_, "setting the map size");
    }
  }

  MDB_env* env_ = nullptr;
  std::atomic<bool> writer_busy_{false};
};

DBRegisterer g_lmdb("lmdb", MakeDB<LMDB>);
DBRegisterer g_lmdb_caffe2_name("LMDB", MakeDB<LMDB>);

}  // namespace
}  // namespace db
}  // namespace doppio
