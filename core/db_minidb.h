// Caffe2's minidb backend (db_minidb.cc), which also opens over a file
// descriptor the caller opened itself: Load and Save open checkpoints
// relative to a directory descriptor without following symbolic links
// (operators/db_path.h), so that no name is looked up again afterwards.
#pragma once

#include <memory>
#include <string>

#include "core/db.h"

namespace doppio {
namespace db {

// A minidb over `fd`, which it takes over (closing it, also when this
// throws): a regular file open for reading (READ), for writing from its
// start (NEW: the caller created or truncated it) or for appending (WRITE).
// `path` names the file in messages.
std::unique_ptr<DB> OpenMiniDBOnDescriptor(int fd, const std::string& path, Mode mode);

// Whether `type` names the minidb backend ("minidb", or Caffe2's "MiniDB").
bool IsMiniDBType(const std::string& type);

}  // namespace db
}  // namespace doppio
