#include "operators/atomic_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/enforce.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void SyncDescriptorOf(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  DOPPIO_ENFORCE(fd >= 0, "cannot open '", path, "' to flush it to disk: ", std::strerror(errno));
  const int result = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  // Some filesystems cannot fsync a directory; the data itself was synced.
  DOPPIO_ENFORCE(result == 0 || (flags & O_DIRECTORY) != 0, "flushing '", path,
                 "' to disk failed: ", std::strerror(error));
}

void SyncParentDirectory(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  SyncDescriptorOf(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

}  // namespace

std::string TemporarySiblingPath(const std::string& target) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return MakeString(WithoutTrailingSlashes(target), ".tmp-", ::getpid(), "-", now % 1000000,
                    "-", counter++);
}

void SyncPath(const std::string& path) {
  struct stat info;
  DOPPIO_ENFORCE(::stat(path.c_str(), &info) == 0, "cannot flush '", path,
                 "' to disk: ", std::strerror(errno));
  if (S_ISDIR(info.st_mode)) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(path, error)) {
      if (entry.is_regular_file()) SyncDescriptorOf(entry.path().string(), O_RDONLY);
    }
    DOPPIO_ENFORCE(!error, "cannot list '", path, "' to flush it: ", error.message());
    SyncDescriptorOf(path, O_RDONLY | O_DIRECTORY);
  } else {
    SyncDescriptorOf(path, O_RDONLY);
  }
}

void ReplacePath(const std::string& from, const std::string& to_path) {
  const std::string to = WithoutTrailingSlashes(to_path);
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    const int error = errno;
    // rename cannot replace a non-empty directory, nor a file by a directory
    // or the reverse; swap the two instead and drop the old one.
    const bool kind_conflict = error == ENOTEMPTY || error == EEXIST || error == EISDIR ||
                               error == ENOTDIR;
    DOPPIO_ENFORCE(kind_conflict, "cannot move '", from, "' to '", to,
                   "': ", std::strerror(error));
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) != 0) {
      // No atomic exchange on this filesystem: move the old one aside first.
      const std::string aside = TemporarySiblingPath(to) + ".old";
      DOPPIO_ENFORCE(std::rename(to.c_str(), aside.c_str()) == 0, "cannot move '", to,
                     "' aside to replace it: ", std::strerror(errno));
      if (std::rename(from.c_str(), to.c_str()) != 0) {
        const int move_error = errno;
        std::rename(aside.c_str(), to.c_str());
        DOPPIO_THROW("cannot move '", from, "' to '", to, "': ", std::strerror(move_error));
      }
      RemovePathQuietly(aside);
    } else {
      RemovePathQuietly(from);  // now the old content
    }
  }
  SyncParentDirectory(to);
}

void RemovePathQuietly(const std::string& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

}  // namespace doppio
