// Caffe2's minidb: a plain file of records, each a little-endian int32 key
// length, an int32 value length, the key bytes and the value bytes, in the
// order they were written. No index, no seeking.
//
// Files come from anywhere, so the reader checks every record against the
// file's size before reading or allocating it: a truncated file, a negative
// or oversized length, or trailing garbage is an Error naming the file and
// the byte offset, never a crash or a huge allocation.
//
// A DB opened by path opens its file once, as one opened over a descriptor
// (OpenMiniDBOnDescriptor) does; cursors read that one open file with pread,
// each at its own offsets, so the name is never looked up again.
#include "core/db_minidb.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

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

// An open file, closed with its last owner (the DB and its cursors).
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  int get() const { return fd_; }
  // Hands the descriptor over (to a FILE*).
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// The size of a file to read; only regular files (a FIFO or a device could
// block forever or never end).
int64_t RegularFileSize(int fd, const std::string& path) {
  struct stat info;
  DOPPIO_ENFORCE(::fstat(fd, &info) == 0 && S_ISREG(info.st_mode), "'", path,
                 "' is not a regular file, so it is not a minidb file");
  return static_cast<int64_t>(info.st_size);
}

class MiniDBCursor final : public Cursor {
 public:
  MiniDBCursor(std::shared_ptr<const Descriptor> file, const std::string& path)
      : path_(path), file_(std::move(file)) {
    file_size_ = RegularFileSize(file_->get(), path_);
    ReadRecordAt(0);
  }

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
  void CopyKeyTo(std::string* out) override {
    DOPPIO_ENFORCE(valid_, "no current record: minidb '", path_, "' is exhausted");
    out->assign(key_);
  }
  void CopyValueTo(std::string* out) override {
    DOPPIO_ENFORCE(valid_, "no current record: minidb '", path_, "' is exhausted");
    out->assign(value_);
  }
  bool Valid() override { return valid_; }

 private:
  [[noreturn]] void Corrupt(int64_t offset, const std::string& what) const {
    DOPPIO_THROW("minidb file '", path_, "' is corrupt: ", what, " (record at byte offset ",
                 offset, " of ", file_size_, ")");
  }

  void ReadExactly(int64_t offset, char* out, int64_t count) {
    int64_t done = 0;
    while (done < count) {
      const ssize_t got = ::pread(file_->get(), out + done, static_cast<size_t>(count - done),
                                  static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        Corrupt(offset, MakeString("cannot read ", count, " bytes (",
                                   got < 0 ? SystemError() : std::string("end of file"),
                                   "; was the file truncated while reading?)"));
      }
      done += got;
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
  std::shared_ptr<const Descriptor> file_;
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

const char* ModeVerb(Mode mode) {
  return mode == READ ? "reading" : mode == NEW ? "writing" : "appending";
}

// Opens `path` as fopen's "rb", "wb" or "ab" would, but without blocking on
// a FIFO (the reader refuses anything but a regular file afterwards).
int OpenPath(const std::string& path, Mode mode) {
  const int flags = mode == READ  ? O_RDONLY | O_NONBLOCK
                    : mode == NEW ? O_WRONLY | O_CREAT | O_TRUNC
                                  : O_WRONLY | O_CREAT | O_APPEND;
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);
  DOPPIO_ENFORCE(fd >= 0, "cannot open minidb file '", path, "' for ", ModeVerb(mode), ": ",
                 SystemError());
  return fd;
}

class MiniDB final : public DB {
 public:
  MiniDB(const std::string& path, Mode mode) : MiniDB(OpenPath(path, mode), path, mode) {}

  MiniDB(int fd, const std::string& path, Mode mode) : DB(path, mode) {
    auto descriptor = std::make_shared<Descriptor>(fd);
    if (mode == READ) {
      // Fail now, not at the first cursor, when the file is not one.
      RegularFileSize(fd, path);
      const int status = ::fcntl(fd, F_GETFL);
      if (status >= 0) ::fcntl(fd, F_SETFL, status & ~O_NONBLOCK);
      read_file_ = std::move(descriptor);
      return;
    }
    file_ = ::fdopen(fd, mode == NEW ? "wb" : "ab");
    DOPPIO_ENFORCE(file_ != nullptr, "cannot open minidb file '", path, "' for ",
                   ModeVerb(mode), ": ", SystemError());
    descriptor->release();  // file_ owns it now
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
    // Cursors share the file; pread keeps their offsets apart.
    return std::make_unique<MiniDBCursor>(read_file_, path_);
  }

  std::unique_ptr<Transaction> NewTransaction() override {
    DOPPIO_ENFORCE(mode_ != READ && file_ != nullptr, "minidb '", path_,
                   "' is not open for writing");
    return std::make_unique<MiniDBTransaction>(file_, path_, &file_mutex_);
  }

 private:
  FILE* file_ = nullptr;
  std::mutex file_mutex_;
  std::shared_ptr<const Descriptor> read_file_;
};

DBRegisterer g_minidb("minidb", MakeDB<MiniDB>);
DBRegisterer g_minidb_caffe2_name("MiniDB", MakeDB<MiniDB>);

}  // namespace

std::unique_ptr<DB> OpenMiniDBOnDescriptor(int fd, const std::string& path, Mode mode) {
  DOPPIO_ENFORCE(fd >= 0, "cannot open minidb file '", path, "': no open file descriptor");
  try {
    return std::make_unique<MiniDB>(fd, path, mode);
  } catch (Error& error) {
    error.AppendContext(MakeString("while opening minidb '", path, "' for ", ModeVerb(mode)));
    throw;
  }
}

bool IsMiniDBType(const std::string& type) { return type == "minidb" || type == "MiniDB"; }

}  // namespace db
}  // namespace doppio
