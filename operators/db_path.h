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
// The check is made when the op runs. It cannot stop a symbolic link that
// someone swaps in between the check and the open; it guards against
// names in nets, not against a hostile process sharing the file system.
#pragma once

#include <string>

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

}  // namespace doppio
