// The check of LMDB data files before liblmdb maps them (core/db_lmdb_check.h),
// the free-page database (freelist) included.
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

using testing::ErrorIfAny;
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
  EXPECT_MESSAGE_HAS(ReadError(damaged), "node 0 of tree page");
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

// liblmdb 0.9's meta: the free-page database record starts at 40, the main
// one at 88; a record's root page is at +40; the transaction id at 144. A
// freelist leaf node: data size (u16 lo, u16 hi), flags (u16), key size (u16),
// an 8-byte transaction id, then the value: a page count (u64) and that many
// page numbers (u64).
constexpr size_t kFreeRoot = 40 + 40, kMainRoot = 88 + 40, kTxnId = 144;
constexpr uint64_t kNoPage = ~uint64_t{0};

// A db whose freelist is not empty: later transactions rewrite the keys of
// earlier ones, freeing the pages that held them.
class LMDBFreelistTest : public LMDBCheckTest {
 protected:
  void SetUp() override {
    dir_ = TempDir("lmdb_freelist") + "/db";
    std::unique_ptr<db::DB> out = db::OpenDB("lmdb", dir_, db::NEW);
    std::unique_ptr<db::Transaction> txn = out->NewTransaction();
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 200; ++i) {
        txn->Put("key" + std::to_string(1000 + i), std::string(40, 'a' + round));
      }
      txn->Commit();
    }
    txn.reset();
    out->Close();
    original_ = ReadBytes(DataFile());
    page_size_ = Get<uint32_t>(original_, kPageSizeField);
    ASSERT_EQ(page_size_, 4096u);
    // The meta liblmdb uses: the one with the higher transaction id.
    meta_ = Get<uint64_t>(original_, page_size_ + kTxnId) > Get<uint64_t>(original_, kTxnId)
                ? page_size_
                : 0;
    const uint64_t free_root = Get<uint64_t>(original_, meta_ + kFreeRoot);
    ASSERT_NE(free_root, kNoPage) << "the rewrites left no freelist to damage";
    free_leaf_ = static_cast<size_t>(free_root) * page_size_;
    ASSERT_EQ(Get<uint16_t>(original_, free_leaf_ + kFlags), kLeaf)
        << "expected a one-page freelist";
    const size_t node = free_leaf_ + Get<uint16_t>(original_, free_leaf_ + kFirstNodeOffset);
    ASSERT_EQ(Get<uint16_t>(original_, node + 4), 0) << "expected an inline freelist value";
    ASSERT_EQ(Get<uint16_t>(original_, node + 6), 8u);
    count_at_ = node + 8 + 8;
    ASSERT_GE(Get<uint64_t>(original_, count_at_), 1u);
  }

  size_t meta_ = 0;       // byte offset of the meta in use
  size_t free_leaf_ = 0;  // byte offset of the freelist's leaf page
  size_t count_at_ = 0;   // byte offset of the first record's page count
};

TEST_F(LMDBFreelistTest, IntactFreelistPassesAndIsReused) {
  EXPECT_EQ(ErrorIfAny([&] {
              std::unique_ptr<db::DB> in = db::OpenDB("lmdb", dir_, db::READ);
              std::unique_ptr<db::Cursor> cursor = in->NewCursor();
              for (; cursor->Valid(); cursor->Next()) cursor->value();
            }),
            "");
  // A writer reuses the listed pages; the result must check and read too.
  {
    std::unique_ptr<db::DB> out = db::OpenDB("lmdb", dir_, db::WRITE);
    std::unique_ptr<db::Transaction> txn = out->NewTransaction();
    for (int i = 0; i < 200; ++i) txn->Put("key" + std::to_string(1000 + i), "zz");
    txn->Commit();
    txn.reset();
    out->Close();
  }
  std::unique_ptr<db::DB> in = db::OpenDB("lmdb", dir_, db::READ);
  std::unique_ptr<db::Cursor> cursor = in->NewCursor();
  int records = 0;
  for (; cursor->Valid(); cursor->Next()) {
    EXPECT_EQ(cursor->value(), "zz");
    ++records;
  }
  EXPECT_EQ(records, 200);
}

TEST_F(LMDBFreelistTest, FreePageOutsideTheFileIsRefused) {
  std::string damaged = original_;
  Put<uint64_t>(&damaged, count_at_ + 8, 100000);
  EXPECT_MESSAGE_HAS(ReadError(damaged), DataFile(), "freelist holds page 100000",
                     "outside the data pages");
  damaged = original_;
  Put<uint64_t>(&damaged, count_at_ + 8, 1);  // a meta page
  EXPECT_MESSAGE_HAS(ReadError(damaged), "freelist holds page 1,", "outside");
}

TEST_F(LMDBFreelistTest, FreePageInUseOrListedTwiceIsRefused) {
  std::string damaged = original_;
  const uint64_t main_root = Get<uint64_t>(original_, meta_ + kMainRoot);
  Put<uint64_t>(&damaged, count_at_ + 8, main_root);
  EXPECT_MESSAGE_HAS(ReadError(damaged), "freelist holds page " + std::to_string(main_root),
                     "which a tree uses");
  if (Get<uint64_t>(original_, count_at_) >= 2) {
    damaged = original_;
    Put<uint64_t>(&damaged, count_at_ + 16, Get<uint64_t>(original_, count_at_ + 8));
    EXPECT_MESSAGE_HAS(ReadError(damaged), "twice");
  }
}

TEST_F(LMDBFreelistTest, RecordCountPastItsValueIsRefused) {
  std::string damaged = original_;
  Put<uint64_t>(&damaged, count_at_, uint64_t{1} << 60);
  EXPECT_MESSAGE_HAS(ReadError(damaged), DataFile(), "freelist record", "lists");
}

TEST_F(LMDBFreelistTest, FreelistRootOutsideTheFileOrNotALeafIsRefused) {
  std::string damaged = original_;
  Put<uint64_t>(&damaged, meta_ + kFreeRoot, 100000);
  EXPECT_MESSAGE_HAS(ReadError(damaged), DataFile(), "freelist page 100000");
  damaged = original_;
  Put<uint16_t>(&damaged, free_leaf_ + kFlags, kOverflow);
  EXPECT_MESSAGE_HAS(ReadError(damaged), "not those of a branch or leaf page");
}

}  // namespace
}  // namespace doppio
