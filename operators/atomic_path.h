// Replacing a file or directory so that readers see either the old one or
// the new one, never a half-written mix: write to TemporarySiblingPath(target),
// SyncPath it, then ReplacePath(temporary, target). Save uses this for
// checkpoints (minidb files and lmdb directories alike).
#pragma once

#include <string>

namespace doppio {

// An unused name in target's directory (so the final rename never crosses
// filesystems): "<target>.tmp-<pid>-<n>".
std::string TemporarySiblingPath(const std::string& target);

// Flushes a file, or a directory's files and the directory itself, to disk.
void SyncPath(const std::string& path);

// Moves `from` onto `to`, atomically where the kernel allows (rename, or an
// exchange when `to` is a non-empty directory), then syncs to's directory.
// On failure `to` is left as it was.
void ReplacePath(const std::string& from, const std::string& to);

// Removes a file or directory tree; errors are ignored (for clean-up paths).
void RemovePathQuietly(const std::string& path);

}  // namespace doppio
