// The check of LMDB data files before liblmdb maps them (core/db_lmdb_check.h).
// Damaged files are made by editing a real data.mdb at offsets taken from
// liblmdb 0.9's documented layout (written out here, independently of the
// checker): each must fail to open or read with an Error naming the file,
// where liblmdb alone would crash (SIGBUS, SIGFPE) or read out of bounds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/db.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

// liblmdb 0.9, 64-bit little-endian: page header = pgno u64, pad u16,
// flags u16, lower u16 / upper u16 (or overflow page count u32); meta page
// body at 16: magic, version, address, mapsize, free db record (its first
// u32 is the page size), main db record, last page u64 at 136.
constexpr size_t kFlags = 10, kLower = 12, kOverflowCount = 12, kPageSizeField = 40,
                 kLastPage = 136, kFirstNodeOffset = 16;
constexpr uint16_t kLeaf = 0x02, kOverflow = 0x04;

template <typename T>
T Get(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}
template <typename T>
void Put(std::string* bytes, size_t offset, T value) {
  std::memcpy(&(*bytes)[offset], &value, sizeof(T));
}

class LMDBCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("lmdb_check") + "/db";
    std::unique_ptr<db::DB> out = db::OpenDB("lmdb", dir_, db::NEW);
    std::unique_ptr<db::Transaction> txn = out->NewTransaction();
    for (int i = 0; i < 300; ++i) txn->Put("key" + std::to_string(1000 + i), "value");
    txn->Put("big", std::string(10000, 'x'));  // more than a page: overflow
    txn->Commit();
    txn.reset();
    out->Close();
    original_ = ReadBytes(DataFile());
    page_size_ = Get<uint32_t>(original_, kPageSizeField);
    ASSERT_EQ(page_size_, 4096u);
  }

  std::string DataFile() const { return dir_ + "/data.mdb"; }

  // The first page with these header flags.
  size_t FindPage(uint16_t flags) const {
    for (size_t page = 2; page < original_.size() / page_size_; ++page) {
      if (Get<uint16_t>(original_, page * page_size_ + kFlags) == flags) return page;
    }
    ADD_FAILURE() << "no page with flags " << flags;
    return 2;
  }

  // Opens and reads every record; the message of the Error that must occur.
  std::string ReadError(const std::string& damaged) {
    WriteBytes(DataFile(), damaged);
    return ErrorOf([&] {
      std::unique_ptr<db::DB> in = db::OpenDB("lmdb", dir_, db::READ);
      std::unique_ptr<db::Cursor> cursor = in->NewCursor();
      for (; cursor->Valid(); cursor->Next()) cursor->value();
    });
  }

  std::string dir_;
  std::string original_;
  size_t page_size_ = 0;
};

TEST_F(LMDBCheckTest, IntactFileReadsEveryRecord) {
  std::unique_ptr<db::DB> in = db::OpenDB("lmdb", dir_, db::READ);
  std::unique_ptr<db::Cursor> cursor = in->NewCursor();
  int records = 0;
  for (; cursor->Valid(); cursor->Next()) {
    if (cursor->key() == "big") EXPECT_EQ(cursor->value(), std::string(10000, 'x'));
    ++records;
  }
  EXPECT_EQ(records, 301);
}

TEST_F(LMDBCheckTest, TruncatedOrForeignFilesAreRefused) {
  EXPECT_MESSAGE_HAS(ReadError(original_.substr(0, 100)), DataFile(), "cannot hold a meta page");
  EXPECT_MESSAGE_HAS(ReadError(std::string(3 * page_size_, 'z')), DataFile(), "magic");
  // All pages but the metas gone: the meta's last page is past the end.
  EXPECT_MESSAGE_HAS(ReadError(original_.substr(0, 2 * page_size_)), DataFile(),
                     "truncated");
}

TEST_F(LMDBCheckTest, BadPageSizeIsRefused) {
  // liblmdb divides by it: SIGFPE.
  std::string zero = original_;
  Put<uint32_t>(&zero, kPageSizeField, 0);
  EXPECT_MESSAGE_HAS(ReadError(zero), "page size 0");
  std::string odd = original_;
  Put<uint32_t>(&odd, kPageSizeField, 3000);
  EXPECT_MESSAGE_HAS(ReadError(odd), "page size 3000");
}

TEST_F(LMDBCheckTest, LastPageBeyondTheFileIsRefused) {
  std::string damaged = original_;
  for (size_t meta : {size_t{0}, page_size_}) Put<uint64_t>(&damaged, meta + kLastPage, 100000);
  EXPECT_MESSAGE_HAS(ReadError(damaged), DataFile(), "last page is 100000");
}

TEST_F(LMDBCheckTest, NodeOutsideItsPageIsRefused) {
  const size_t leaf = FindPage(kLeaf) * page_size_;
  std::string damaged = original_;
  // The first node now "starts" inside the page header.
  Put<uint16_t>(&damaged, leaf + kFirstNodeOffset, 4);
  EXPECT_MESSAGE_HAS(ReadError(damaged), "node 0 of page");
  damaged = original_;
  Put<uint16_t>(&damaged, leaf + kLower, 2);  // free space starts before the header ends
  EXPECT_MESSAGE_HAS(ReadError(damaged), "free-space bounds");
}

TEST_F(LMDBCheckTest, OverflowRunPastTheEndIsRefused) {
  const size_t overflow = FindPage(kOverflow) * page_size_;
  std::string damaged = original_;
  Put<uint32_t>(&damaged, overflow + kOverflowCount, 1000000);
  EXPECT_MESSAGE_HAS(ReadError(damaged), "overflow pages");
  damaged = original_;
  Put<uint16_t>(&damaged, overflow + kFlags, kLeaf);  // no longer an overflow page
  EXPECT_MESSAGE_HAS(ReadError(damaged), "not the start of an overflow run");
}

}  // namespace
}  // namespace doppio
