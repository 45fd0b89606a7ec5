// Where the db ops (Load, Save, DBExists, CreateDB) find a db they are given
// by name, following Caffe2's `absolute_path` argument:
//
// - absolute_path=1: the path is used as given (a relative one is relative
//   to the process's current directory), as in Caffe2.
// - absolute_path=0 (the default): a relative path is relative to the
//   workspace's root folder (Workspace::RootFolder, Caffe2's root_folder,
//   "." by default), and the db must stay inside that folder: a path whose
//   ".." components or symbolic links lead out of it is refused, as is an
//   absolute path outside it. (Caffe2 pastes the root in front of whatever it
//   is given, so an absolute path there silently lands under the root; here it
//   is either inside the root or an error.)
//
// CreateDB has no absolute_path in Caffe2 and opens datasets wherever they
// are: an absolute path is used as given there; relative ones follow the
// rules above.
//
// The check is made when the op runs. Load and Save then open the db's
// directory by walking from the root folder one component of the checked,
// link-free path at a time with O_NOFOLLOW (OpenDBLocation), and open or
// rename the db inside that directory descriptor (openat, renameat), so a
// symbolic link someone swaps in after the check makes them fail instead of
// reaching outside the root. What remains: liblmdb opens its directory by
// name, so for LMDB dbs the directory is only compared (device and inode)
// with the walked one just before liblmdb opens it; a swap within that
// window is not caught. CreateDB and DBExists open by name after the check.
#pragma once

#include <string>
#include <vector>

namespace doppio {

enum class AbsolutePathPolicy {
  kInsideRoot,   // absolute paths must lie inside the root folder
  kAsGiven,      // absolute paths are used as given (CreateDB)
};

// The path to open for db `path` as op `op_type` names it. Throws an Error
// naming the op, the path and the root folder when the path leaves the root.
std::string ResolveDBPath(const std::string& op_type, const std::string& path,
                          bool absolute_path, const std::string& root_folder,
                          AbsolutePathPolicy absolute_policy = AbsolutePathPolicy::kInsideRoot);

// ResolveDBPath's answer with what it checked.
struct CheckedDBPath {
  std::string path;  // as ResolveDBPath returns it
  // Whether the db must stay inside the root folder; if so, the root
  // folder's real path and the db's path below it with every symbolic link
  // resolved, one component per entry.
  bool confined = false;
  std::string root_real;
  std::vector<std::string> components;
};

CheckedDBPath CheckDBPath(const std::string& op_type, const std::string& path,
                          bool absolute_path, const std::string& root_folder,
                          AbsolutePathPolicy absolute_policy = AbsolutePathPolicy::kInsideRoot);

// The directory a db lives in, held open, and the db's name in it: what
// Load and Save open, create and rename at, so that the path is not looked
// up again once checked.
class DBLocation {
 public:
  DBLocation(int directory_fd, std::string name, std::string path)
      : directory_fd_(directory_fd), name_(std::move(name)), path_(std::move(path)) {}
  ~DBLocation();
  DBLocation(DBLocation&& other) noexcept;
  DBLocation(const DBLocation&) = delete;
  DBLocation& operator=(const DBLocation&) = delete;
  DBLocation& operator=(DBLocation&& other) noexcept;

  int directory() const { return directory_fd_; }
  // The db's file or directory name inside directory().
  const std::string& name() const { return name_; }
  // The db's path as checked, for messages and for libraries that open by
  // name (liblmdb).
  const std::string& path() const { return path_; }
  // The path of `sibling`, a name in the same directory.
  std::string SiblingPath(const std::string& sibling) const;
  // Throws unless `path`'s directory, looked up by name now, is still
  // directory() (same device and inode): a last check before handing a path
  // to a library that opens by name.
  void EnforceDirectoryUnchanged(const std::string& op_type, const std::string& path) const;

 private:
  int directory_fd_;
  std::string name_;
  std::string path_;
};

// Opens the directory of a checked db path: when confined, component by
// component from the root folder without following symbolic links (one
// swapped in since the check is an Error naming the op and the path);
// otherwise the parent directory as named, links followed (absolute_path=1
// and CreateDB's absolute paths, as in Caffe2).
DBLocation OpenDBLocation(const std::string& op_type, const CheckedDBPath& checked);

}  // namespace doppio
