#include "operators/atomic_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/enforce.h"

namespace doppio {
namespace {

constexpr const char* kAsideSuffix = ".old";

// Closes a descriptor on every way out of a scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The names in directory `dir` but "." and "..". Read through a descriptor
// of its own, so `dir`'s offset is untouched; empty if it cannot be read.
std::vector<std::string> ListAt(int dir) {
  std::vector<std::string> names;
  const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return names;
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(listing);
  return names;
}

void SyncDescriptor(int fd, bool directory, const std::string& path) {
  // Some filesystems cannot fsync a directory; the data itself was synced.
  DOPPIO_ENFORCE(::fsync(fd) == 0 || directory, "flushing '", path, "' to disk failed: ",
                 std::strerror(errno));
}

bool AllDigits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The PID in `suffix`, what TemporarySiblingName appends after ".tmp-":
// "PID-TIME-COUNT", optionally followed by ".old"; 0 for anything else.
pid_t PidOfTemporarySuffix(std::string suffix) {
  const std::string aside = kAsideSuffix;
  if (suffix.size() > aside.size() &&
      suffix.compare(suffix.size() - aside.size(), aside.size(), aside) == 0) {
    suffix.resize(suffix.size() - aside.size());
  }
  const size_t first = suffix.find('-');
  const size_t second = first == std::string::npos ? first : suffix.find('-', first + 1);
  if (second == std::string::npos) return 0;
  const std::string pid = suffix.substr(0, first);
  if (!AllDigits(pid) || pid.size() > 9 ||
      !AllDigits(suffix.substr(first + 1, second - first - 1)) ||
      !AllDigits(suffix.substr(second + 1))) {
    return 0;
  }
  return static_cast<pid_t>(std::stol(pid));
}

}  // namespace

std::string TemporarySiblingName(const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return MakeString(name, ".tmp-", ::getpid(), "-", now % 1000000, "-", counter++);
}

void SyncAt(int dir, const std::string& name, const std::string& path) {
  const ScopedFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  DOPPIO_ENFORCE(fd.get() >= 0, "cannot open '", path, "' to flush it to disk: ",
                 std::strerror(errno));
  struct stat info;
  DOPPIO_ENFORCE(::fstat(fd.get(), &info) == 0, "cannot flush '", path, "' to disk: ",
                 std::strerror(errno));
  if (S_ISDIR(info.st_mode)) {
    for (const std::string& entry : ListAt(fd.get())) {
      const ScopedFd file(::openat(fd.get(), entry.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      struct stat entry_info;
      if (file.get() >= 0 && ::fstat(file.get(), &entry_info) == 0 &&
          S_ISREG(entry_info.st_mode)) {
        SyncDescriptor(file.get(), false, path + "/" + entry);
      }
    }
  }
  SyncDescriptor(fd.get(), S_ISDIR(info.st_mode), path);
}

void ReplaceAt(int dir, const std::string& from, const std::string& to,
               const std::string& to_path) {
  if (::renameat(dir, from.c_str(), dir, to.c_str()) != 0) {
    const int error = errno;
    // rename cannot replace a non-empty directory, nor a file by a directory
    // or the reverse; swap the two instead and drop the old one.
    const bool kind_conflict = error == ENOTEMPTY || error == EEXIST || error == EISDIR ||
                               error == ENOTDIR;
    DOPPIO_ENFORCE(kind_conflict, "cannot move '", from, "' to '", to_path,
                   "': ", std::strerror(error));
    if (::renameat2(dir, from.c_str(), dir, to.c_str(), RENAME_EXCHANGE) != 0) {
      // No atomic exchange on this filesystem: move the old one aside first.
      const std::string aside = TemporarySiblingName(to) + kAsideSuffix;
      DOPPIO_ENFORCE(::renameat(dir, to.c_str(), dir, aside.c_str()) == 0, "cannot move '",
                     to_path, "' aside to replace it: ", std::strerror(errno));
      if (::renameat(dir, from.c_str(), dir, to.c_str()) != 0) {
        const int move_error = errno;
        ::renameat(dir, aside.c_str(), dir, to.c_str());
        DOPPIO_THROW("cannot move '", from, "' to '", to_path, "': ",
                     std::strerror(move_error));
      }
      RemoveQuietlyAt(dir, aside);
    } else {
      RemoveQuietlyAt(dir, from);  // now the old content
    }
  }
  SyncDescriptor(dir, true, to_path + "/..");
}

void RemoveQuietlyAt(int dir, const std::string& name) {
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) return;
  // A directory (unlink says EISDIR on Linux): empty it first. O_NOFOLLOW:
  // a link swapped in for it is not followed.
  const ScopedFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                     O_CLOEXEC));
  if (sub.get() < 0) return;
  for (const std::string& entry : ListAt(sub.get())) RemoveQuietlyAt(sub.get(), entry);
  ::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
}

std::vector<std::string> RemoveStaleTemporarySiblingsAt(int dir, const std::string& name) {
  const std::string prefix = name + ".tmp-";
  std::vector<std::string> stale;
  // A directory that cannot be listed only means nothing is cleaned up; the
  // Save itself reports real problems with it.
  for (const std::string& entry : ListAt(dir)) {
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t pid = PidOfTemporarySuffix(entry.substr(prefix.size()));
    if (pid <= 0 || pid == ::getpid()) continue;
    // Alive (0), or someone else's (EPERM): not ours to remove.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(entry);
  }
  for (const std::string& entry : stale) RemoveQuietlyAt(dir, entry);
  return stale;
}

}  // namespace doppio
