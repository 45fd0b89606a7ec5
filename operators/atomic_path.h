// Replacing a file or directory so that readers see either the old one or
// the new one, never a half-written mix: write to TemporarySiblingName(name)
// in the same directory, SyncAt it, then ReplaceAt(temporary, name). Save
// uses this for checkpoints (minidb files and lmdb directories alike).
//
// Everything works on names inside a directory held open (`dir`, a
// descriptor: operators/db_path.h's DBLocation), never on paths looked up
// again, and follows no symbolic link at the name itself. `path` arguments
// only name things in messages.
#pragma once

#include <string>
#include <vector>

namespace doppio {

// An unused name beside `name` (so the final rename never crosses
// filesystems): "<name>.tmp-<pid>-<time>-<n>".
std::string TemporarySiblingName(const std::string& name);

// Flushes `name` in `dir` to disk: a file, or a directory's files and the
// directory itself.
void SyncAt(int dir, const std::string& name, const std::string& path);

// Moves `from` onto `to` (names in `dir`), atomically where the kernel
// allows (rename, or an exchange when `to` is a non-empty directory), then
// syncs `dir`. On failure `to` is left as it was. `to_path` names `to`.
void ReplaceAt(int dir, const std::string& from, const std::string& to,
               const std::string& to_path);

// Removes a file or directory tree `name` in `dir` without following
// symbolic links; errors are ignored (for clean-up paths).
void RemoveQuietlyAt(int dir, const std::string& name);

// Removes the temporaries that Saves of dead processes left beside `name` in
// `dir` (a SIGKILL leaves no chance to clean up): names TemporarySiblingName
// could have made, with or without ReplaceAt's ".old" suffix, whose PID no
// longer runs (kill(pid, 0) fails with ESRCH). A live PID's temporaries (this
// process's included: another thread may be saving) and every other name are
// left alone. Returns the names removed. A PID reused since keeps its file
// until that process ends too; a writer in another PID namespace sharing the
// directory would look dead, which Save does not support.
std::vector<std::string> RemoveStaleTemporarySiblingsAt(int dir, const std::string& name);

}  // namespace doppio
