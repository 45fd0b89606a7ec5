// A structural check of an LMDB data file, run before liblmdb maps it.
//
// liblmdb trusts its data file: a truncated or damaged data.mdb makes it
// divide by zero, follow page numbers past the end of the mapping (SIGBUS)
// or copy keys and values from outside their page. Fuzzing found all three.
// This check reads the file the way liblmdb will (0.9.x format, 64-bit
// little-endian) and fails with an Error naming the file and the page
// before liblmdb sees anything it could crash on:
//
// - both meta pages: meta flag, magic, version, one power-of-two page size;
// - the meta liblmdb will use (the newer): its last page inside the file,
//   environment and main-database flags that plain key/value dbs have (no
//   fixed mapping, no duplicate or integer keys), a root inside the file;
// - every branch and leaf page of the main database and of the free-page
//   database (the freelist), walked from their roots: its page number and
//   type, its free-space bounds, every node's header, key and inline value
//   within the page, child pages inside the file and reached once, overflow
//   values within their overflow pages;
// - every page the freelist lists (liblmdb's next write transaction reuses
//   them unchecked): a data page inside the file, used by neither tree,
//   listed once, in records whose page count fits the record.
//
// Cost: one read of every branch and leaf page, of each overflow value's
// first page header and of the freelist's overflow values, at open. A file
// that changes while it is checked (a live writer) can fail the check
// spuriously; one that a hostile process changes after it cannot be guarded
// against here.
#pragma once

#include <string>

namespace doppio {
namespace db {

// Checks `directory`/data.mdb; a directory without one passes (liblmdb
// reports that itself, or creates it when writing).
void CheckLMDBDataFile(const std::string& directory);

}  // namespace db
}  // namespace doppio
