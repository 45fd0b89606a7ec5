// How much address space an LMDB maps, read from /proc/self/maps: a reader
// maps about what the db holds, not the writer's 1 TB reservation, and a
// writer in a process that may not map 1 TB (ulimit -v) still works with a
// smaller map.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/db.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::TempDir;

// Bytes mapped from `file` in this process, by /proc/self/maps.
uint64_t MappedBytesOf(const std::string& file) {
  std::ifstream maps("/proc/self/maps");
  uint64_t total = 0;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < file.size() || line.compare(line.size() - file.size(), file.size(), file)) {
      continue;
    }
    std::istringstream fields(line);
    std::string range;
    fields >> range;
    const size_t dash = range.find('-');
    total += std::stoull(range.substr(dash + 1), nullptr, 16) -
             std::stoull(range.substr(0, dash), nullptr, 16);
  }
  return total;
}

void WriteSmallDB(const std::string& path) {
  std::unique_ptr<db::DB> out = db::OpenDB("lmdb", path, db::NEW);
  std::unique_ptr<db::Transaction> transaction = out->NewTransaction();
  for (int i = 0; i < 100; ++i) {
    transaction->Put("key" + std::to_string(i), std::string(100, 'v'));
  }
  transaction->Commit();
  transaction.reset();
  out->Close();
}

TEST(LMDBMapTest, ReadersMapWhatTheDBHoldsNotTheWritersReservation) {
  const std::string path = TempDir("lmdb_map") + "/db";
  WriteSmallDB(path);
  std::unique_ptr<db::DB> in = db::OpenDB("lmdb", path, db::READ);
  const uint64_t mapped = MappedBytesOf(path + "/data.mdb");
  EXPECT_GT(mapped, 0u);
  EXPECT_LT(mapped, uint64_t{16} << 20) << "a 100-record db should not need 16 MB of map";
  // And it reads.
  std::unique_ptr<db::Cursor> cursor = in->NewCursor();
  int records = 0;
  for (; cursor->Valid(); cursor->Next()) ++records;
  EXPECT_EQ(records, 100);
}

TEST(LMDBMapTest, AWriterUnderAnAddressSpaceLimitSettlesForASmallerMap) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve terabytes of shadow memory; an address-space limit "
                  "would stop them, not the db";
#endif
  const std::string path = TempDir("lmdb_limited") + "/db";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // 64 GB more than this process already maps: 1 TB and 256 GB do not fit.
    std::ifstream status("/proc/self/status");
    std::string line;
    uint64_t vm_kb = 0;
    while (std::getline(status, line)) {
      if (line.compare(0, 7, "VmSize:") == 0) vm_kb = std::stoull(line.substr(7));
    }
    const rlim_t bytes = (vm_kb << 10) + (uint64_t{64} << 30);
    const rlimit limit{bytes, bytes};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    try {
      WriteSmallDB(path);
      std::unique_ptr<db::DB> in = db::OpenDB("lmdb", path, db::READ);
      std::unique_ptr<db::Cursor> cursor = in->NewCursor();
      _exit(cursor->Valid() && cursor->key() == "key0" ? 0 : 2);
    } catch (const Error&) {
      _exit(1);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the db failed to open or write; 2: it read wrong; "
                                       "3: no limit could be set";
}

}  // namespace
}  // namespace doppio
