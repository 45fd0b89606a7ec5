// Readers that fail must give back what they opened: a corrupt minidb,
// opened again and again (a retrying data loader), must not use up the
// process's file descriptors. Found by fuzzing: the cursor leaked its file
// when the first record was corrupt.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/db.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::Int32LE;
using testing::TempDir;
using testing::WriteBytes;

size_t OpenFileDescriptors() {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST(DBHandleLeakTest, CorruptMiniDBReleasesItsFileOnEveryFailedOpen) {
  const std::string path = TempDir("handle_leak") + "/corrupt.minidb";
  // A record header promising a 1000-byte key in a 12-byte file.
  WriteBytes(path, Int32LE(1000) + Int32LE(0) + "abcd");
  const size_t before = OpenFileDescriptors();
  for (int i = 0; i < 50; ++i) {
    EXPECT_MESSAGE_HAS(ErrorOf([&] {
                         std::unique_ptr<db::DB> in = db::OpenDB("minidb", path, db::READ);
                         in->NewCursor();
                       }),
                       path, "corrupt");
  }
  EXPECT_EQ(OpenFileDescriptors(), before);
}

}  // namespace
}  // namespace doppio
