// Caffe2's minidb: a plain file of records, each a little-endian int32 key
// length, an int32 value length, the key bytes and the value bytes, in the
// order they were written. No index, no seeking.
//
// Files come from anywhere, so the reader checks every record against the
// file's size before reading or allocating it: a truncated file, a negative
// or oversized length, or trailing garbage is an Error naming the file and
// the byte offset, never a crash or a huge allocation.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/db.h"
#include "core/enforce.h"

namespace doppio {
namespace db {
namespace {

constexpr int64_t kHeaderBytes = 8;

std::string SystemError() { return std::strerror(errno); }

void EncodeInt32(int32_t value, char* out) {
  const uint32_t bits = static_cast<uint32_t>(value);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
}

int32_t DecodeInt32(const unsigned char* in) {
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits |= static_cast<uint32_t>(in[i]) << (8 * i);
  return static_cast<int32_t>(bits);
}

// Opens `path` for reading; only regular files (a FIFO or a device could
// block forever or never end).
FILE* OpenForReading(const std::string& path, int64_t* size) {
  FILE* file = std::fopen(path.c_str(), "rb");
  DOPPIO_ENFORCE(file != nullptr, "cannot open minidb file '", path, "': ", SystemError());
  struct stat info;
  if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fclose(file);
    DOPPIO_THROW("'", path, "' is not a regular file, so it is not a minidb file");
  }
  *size = static_cast<int64_t>(info.st_size);
  return file;
}

class MiniDBCursor final : public Cursor {
 public:
  explicit MiniDBCursor(const std::string& path) : path_(path) {
    file_ = OpenForReading(path, &file_size_);
    try {
      ReadRecordAt(0);
    } catch (...) {
      // The destructor does not run for a half-made cursor; a corrupt first
      // record would otherwise leak the file handle (found by fuzzing).
      std::fclose(file_);
      throw;
    }
  }
  ~MiniDBCursor() override { std::fclose(file_); }

  void Seek(const std::string&) override {
    DOPPIO_THROW("minidb '", path_, "' cannot seek to a key; read it in order");
  }
  void SeekToFirst() override { ReadRecordAt(0); }
  void Next() override {
    DOPPIO_ENFORCE(valid_, "Next() past the end of minidb '", path_, "'");
    ReadRecordAt(next_offset_);
  }
  std::string key() override {
    DOPPIO_ENFORCE(valid_, "no current record: minidb '", path_, "' is exhausted");
    return key_;
  }
  std::string value() override {
    DOPPIO_ENFORCE(valid_, "no current record: minidb '", path_, "' is exhausted");
    return value_;
  }
  bool Valid() override { return valid_; }

 private:
  [[noreturn]] void Corrupt(int64_t offset, const std::string& what) const {
    DOPPIO_THROW("minidb file '", path_, "' is corrupt: ", what, " (record at byte offset ",
                 offset, " of ", file_size_, ")");
  }

  void ReadExactly(int64_t offset, char* out, int64_t count) {
    if (count == 0) return;
    if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0 ||
        std::fread(out, 1, static_cast<size_t>(count), file_) != static_cast<size_t>(count)) {
      Corrupt(offset, MakeString("cannot read ", count, " bytes (", SystemError(),
                                 "; was the file truncated while reading?)"));
    }
  }

  void ReadRecordAt(int64_t offset) {
    valid_ = false;
    key_.clear();
    value_.clear();
    if (offset == file_size_) return;  // a clean end
    const int64_t remaining = file_size_ - offset;
    if (remaining < kHeaderBytes) {
      Corrupt(offset, MakeString("only ", remaining, " bytes where an 8-byte record "
                                 "header should be (truncated file?)"));
    }
    unsigned char header[kHeaderBytes];
    ReadExactly(offset, reinterpret_cast<char*>(header), kHeaderBytes);
    const int64_t key_length = DecodeInt32(header);
    const int64_t value_length = DecodeInt32(header + 4);
    if (key_length <= 0) Corrupt(offset, MakeString("key length ", key_length, " is not positive"));
    if (value_length < 0) Corrupt(offset, MakeString("value length ", value_length, " is negative"));
    if (key_length + value_length > remaining - kHeaderBytes) {
      Corrupt(offset, MakeString("the record declares a ", key_length, "-byte key and a ",
                                 value_length, "-byte value but only ",
                                 remaining - kHeaderBytes,
                                 " bytes follow (truncated file, or not a minidb file)"));
    }
    key_.resize(static_cast<size_t>(key_length));
    value_.resize(static_cast<size_t>(value_length));
    ReadExactly(offset + kHeaderBytes, &key_[0], key_length);
    ReadExactly(offset + kHeaderBytes + key_length, &value_[0], value_length);
    next_offset_ = offset + kHeaderBytes + key_length + value_length;
    valid_ = true;
  }

  std::string path_;
  FILE* file_ = nullptr;
  int64_t file_size_ = 0;
  int64_t next_offset_ = 0;
  bool valid_ = false;
  std::string key_;
  std::string value_;
};

class MiniDBTransaction final : public Transaction {
 public:
  MiniDBTransaction(FILE* file, const std::string& path, std::mutex* mutex)
      : file_(file), path_(path), mutex_(mutex) {}
  ~MiniDBTransaction() override {
    try {
      Commit();
    } catch (const Error&) {
      // Destructors must not throw; Close() reports a failed flush again.
    }
  }

  void Put(const std::string& key, const std::string& value) override {
    DOPPIO_ENFORCE(!key.empty(), "minidb '", path_, "': keys must not be empty");
    const auto limit = static_cast<size_t>(std::numeric_limits<int32_t>::max());
    DOPPIO_ENFORCE(key.size() <= limit && value.size() <= limit, "minidb '", path_,
                   "': record '", key, "' is larger than 2 GB (use a smaller chunk_size)");
    char header[kHeaderBytes];
    EncodeInt32(static_cast<int32_t>(key.size()), header);
    EncodeInt32(static_cast<int32_t>(value.size()), header + 4);
    std::lock_guard<std::mutex> lock(*mutex_);
    const bool written = std::fwrite(header, 1, kHeaderBytes, file_) == kHeaderBytes &&
                         std::fwrite(key.data(), 1, key.size(), file_) == key.size() &&
                         std::fwrite(value.data(), 1, value.size(), file_) == value.size();
    DOPPIO_ENFORCE(written, "writing record '", key, "' to minidb '", path_,
                   "' failed: ", SystemError());
  }

  void Commit() override {
    std::lock_guard<std::mutex> lock(*mutex_);
    DOPPIO_ENFORCE(std::fflush(file_) == 0, "flushing minidb '", path_, "' failed: ",
                   SystemError());
  }

 private:
  FILE* file_;
  std::string path_;
  std::mutex* mutex_;
};

class MiniDB final : public DB {
 public:
  MiniDB(const std::string& path, Mode mode) : DB(path, mode) {
    if (mode == READ) {
      int64_t size = 0;
      // Fail now, not at the first cursor, when the file is unreadable.
      std::fclose(OpenForReading(path, &size));
      return;
    }
    file_ = std::fopen(path.c_str(), mode == NEW ? "wb" : "ab");
    DOPPIO_ENFORCE(file_ != nullptr, "cannot open minidb file '", path, "' for ",
                   mode == NEW ? "writing" : "appending", ": ", SystemError());
  }
  ~MiniDB() override {
    try {
      Close();
    } catch (const Error&) {
      // Destructors must not throw; call Close() to see write errors.
    }
  }

  void Close() override {
    if (file_ == nullptr) return;
    FILE* file = file_;
    file_ = nullptr;
    DOPPIO_ENFORCE(std::fclose(file) == 0, "closing minidb '", path_,
                   "' failed (data may be lost): ", SystemError());
  }

  std::unique_ptr<Cursor> NewCursor() override {
    DOPPIO_ENFORCE(mode_ == READ, "minidb '", path_, "' was opened for writing; open it "
                   "in READ mode to read it");
    // Each cursor reads through its own handle, so cursors never contend.
    return std::make_unique<MiniDBCursor>(path_);
  }

  std::unique_ptr<Transaction> NewTransaction() override {
    DOPPIO_ENFORCE(mode_ != READ && file_ != nullptr, "minidb '", path_,
                   "' is not open for writing");
    return std::make_unique<MiniDBTransaction>(file_, path_, &file_mutex_);
  }

 private:
  FILE* file_ = nullptr;
  std::mutex file_mutex_;
};

DBRegisterer g_minidb("minidb", MakeDB<MiniDB>);
DBRegisterer g_minidb_caffe2_name("MiniDB", MakeDB<MiniDB>);

}  // namespace
}  // namespace db
}  // namespace doppio
