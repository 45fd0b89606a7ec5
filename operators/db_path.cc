#include "operators/db_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/enforce.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;

// Normal form without a trailing separator, so that "/a/b/" and "/a/b" compare
// equal component by component.
fs::path Normal(const fs::path& path) {
  fs::path normal = path.lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal;
}

// Whether `path` is `root` or below it (both absolute and normal).
bool IsInside(const fs::path& path, const fs::path& root) {
  const fs::path relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

std::string ResolveDBPath(const std::string& op_type, const std::string& path,
                          bool absolute_path, const std::string& root_folder,
                          AbsolutePathPolicy absolute_policy) {
  return CheckDBPath(op_type, path, absolute_path, root_folder, absolute_policy).path;
}

CheckedDBPath CheckDBPath(const std::string& op_type, const std::string& path,
                          bool absolute_path, const std::string& root_folder,
                          AbsolutePathPolicy absolute_policy) {
  DOPPIO_ENFORCE(!path.empty(), "", op_type, ": the db path is empty");
  CheckedDBPath checked;
  checked.path = path;
  if (absolute_path) return checked;
  const fs::path given(path);
  if (given.is_absolute() && absolute_policy == AbsolutePathPolicy::kAsGiven) return checked;

  const std::string root = root_folder.empty() ? std::string(".") : root_folder;
  // With the default root the path stays as the user wrote it (messages,
  // DBReader sources); Caffe2 would have made it "./" + path.
  const fs::path candidate = given.is_absolute() || root == "." ? given : fs::path(root) / given;
  const auto refuse = [&](const char* how, const fs::path& resolved, const fs::path& inside) {
    DOPPIO_THROW("", op_type, ": db path '", path, "' leaves the root folder '", root, "'", how,
                 " (it resolves to '", resolved.string(), "', outside '", inside.string(),
                 "'); relative db paths must stay inside the root folder. Pass "
                 "absolute_path=1 to use the path as given.");
  };

  std::error_code error;
  const fs::path root_absolute = Normal(fs::absolute(root, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve the root folder '", root,
                 "': ", error.message());
  const fs::path candidate_absolute = Normal(fs::absolute(candidate, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve db path '", path,
                 "': ", error.message());
  if (!IsInside(candidate_absolute, root_absolute)) {
    refuse("", candidate_absolute, root_absolute);
  }
  DOPPIO_ENFORCE(candidate_absolute != root_absolute, "", op_type, ": db path '", path,
                 "' names the root folder '", root, "' itself, not a db inside it");

  // The same question after following symbolic links, on the real file
  // system: a link inside the root may point anywhere.
  const fs::path root_real = fs::canonical(root_absolute, error);
  DOPPIO_ENFORCE(!error, "", op_type, ": the root folder '", root, "' (for db path '", path,
                 "') cannot be resolved: ", error.message());
  const fs::path candidate_real = Normal(fs::weakly_canonical(candidate_absolute, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve db path '", path,
                 "' under the root folder '", root, "': ", error.message());
  if (!IsInside(candidate_real, root_real) || candidate_real == root_real) {
    refuse(" through a symbolic link", candidate_real, root_real);
  }
  checked.path = candidate.string();
  checked.confined = true;
  checked.root_real = root_real.string();
  for (const fs::path& component : candidate_real.lexically_relative(root_real)) {
    checked.components.push_back(component.string());
  }
  return checked;
}

DBLocation::~DBLocation() {
  if (directory_fd_ >= 0) ::close(directory_fd_);
}

DBLocation::DBLocation(DBLocation&& other) noexcept
    : directory_fd_(other.directory_fd_),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)) {
  other.directory_fd_ = -1;
}

DBLocation& DBLocation::operator=(DBLocation&& other) noexcept {
  if (this != &other) {
    if (directory_fd_ >= 0) ::close(directory_fd_);
    directory_fd_ = other.directory_fd_;
    other.directory_fd_ = -1;
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::string DBLocation::SiblingPath(const std::string& sibling) const {
  const fs::path parent = fs::path(path_).parent_path();
  return parent.empty() ? sibling : (parent / sibling).string();
}

void DBLocation::EnforceDirectoryUnchanged(const std::string& op_type,
                                           const std::string& path) const {
  std::string parent = fs::path(path).parent_path().string();
  if (parent.empty()) parent = ".";
  struct stat named, held;
  DOPPIO_ENFORCE(::stat(parent.c_str(), &named) == 0, "", op_type,
                 ": cannot find the directory '", parent, "' of db '", path_,
                 "': ", std::strerror(errno));
  DOPPIO_ENFORCE(::fstat(directory_fd_, &held) == 0, "", op_type,
                 ": cannot stat the directory of db '", path_, "': ", std::strerror(errno));
  DOPPIO_ENFORCE(named.st_dev == held.st_dev && named.st_ino == held.st_ino, "", op_type,
                 ": the directory '", parent, "' of db '", path_,
                 "' changed after its path was checked (replaced by a symbolic link?)");
}

DBLocation OpenDBLocation(const std::string& op_type, const CheckedDBPath& checked) {
  if (!checked.confined) {
    fs::path given(checked.path);
    if (!given.has_filename() && given.has_relative_path()) given = given.parent_path();
    const std::string name = given.filename().string();
    DOPPIO_ENFORCE(!name.empty() && name != "." && name != "..", "", op_type, ": db path '",
                   checked.path, "' names no file or directory");
    const std::string parent = given.has_parent_path() ? given.parent_path().string() : ".";
    const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DOPPIO_ENFORCE(fd >= 0, "", op_type, ": cannot open the directory '", parent, "' of db '",
                   checked.path, "': ", std::strerror(errno));
    return DBLocation(fd, name, checked.path);
  }
  DOPPIO_ENFORCE(!checked.components.empty(), "", op_type, ": db path '", checked.path,
                 "' names the root folder itself");
  int fd = ::open(checked.root_real.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DOPPIO_ENFORCE(fd >= 0, "", op_type, ": cannot open the root folder '", checked.root_real,
                 "' (for db '", checked.path, "'): ", std::strerror(errno));
  DBLocation location(fd, checked.components.back(), checked.path);
  std::string walked = checked.root_real;
  for (size_t i = 0; i + 1 < checked.components.size(); ++i) {
    const std::string& component = checked.components[i];
    walked += "/" + component;
    const int next = ::openat(location.directory(), component.c_str(),
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      const int error = errno;
      // O_NOFOLLOW on a link: ELOOP; O_DIRECTORY on one: ENOTDIR.
      const bool link = error == ELOOP || error == ENOTDIR;
      DOPPIO_THROW("", op_type, ": cannot open '", walked, "' on the way to db '", checked.path,
                   "': ", std::strerror(error),
                   link ? " (it was a directory when the path was checked: a symbolic link "
                          "swapped in since is not followed out of the root folder)"
                        : "");
    }
    location = DBLocation(next, checked.components.back(), checked.path);
  }
  return location;
}

}  // namespace doppio
