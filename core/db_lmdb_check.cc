// The on-disk layout checked here is liblmdb 0.9's (the version Debian
// ships) on a 64-bit little-endian host: 16-byte page headers, 8-byte page
// numbers, node headers of four uint16s. Offsets are spelled out below
// rather than taken from liblmdb's private structs, which it does not
// install.
#include "core/db_lmdb_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/enforce.h"

namespace doppio {
namespace db {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && sizeof(void*) == 8,
              "the lmdb file check assumes liblmdb's 64-bit little-endian layout");

// Page header: page number (u64), pad (u16), flags (u16), then either the
// free-space bounds lower/upper (u16 each) or an overflow run's page count
// (u32); node offsets (u16 each) follow on branch and leaf pages.
constexpr size_t kPageHeaderBytes = 16;
constexpr size_t kFlagsOffset = 10;
constexpr size_t kLowerOffset = 12;
constexpr size_t kUpperOffset = 14;
constexpr size_t kOverflowPagesOffset = 12;

constexpr uint16_t kBranchPage = 0x01;
constexpr uint16_t kLeafPage = 0x02;
constexpr uint16_t kOverflowPage = 0x04;
constexpr uint16_t kMetaPage = 0x08;
// In-memory bookkeeping bits that may linger in a written header.
constexpr uint16_t kIgnoredPageBits = 0x10 | 0x8000;

// Meta page, after the page header: magic (u32), version (u32), fixed map
// address (u64), map size (u64), two database records (free pages, main),
// last page (u64), transaction id (u64). A database record: pad (u32; the
// free database's holds the page size), flags (u16; the free database's are
// the environment's), depth (u16), four counters (u64), root page (u64).
constexpr size_t kMagicOffset = 16;
constexpr size_t kVersionOffset = 20;
constexpr size_t kDatabasesOffset = 40;
constexpr size_t kDatabaseBytes = 48;
constexpr size_t kDatabaseFlagsOffset = 4;
constexpr size_t kDatabaseRootOffset = 40;
constexpr size_t kLastPageOffset = 136;
constexpr size_t kTxnIdOffset = 144;
constexpr size_t kMetaBytes = 152;

constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr uint16_t kIntegerKeyFlag = 0x08;
constexpr uint64_t kNoPage = ~uint64_t{0};
constexpr uint32_t kMinPageSize = 512;
constexpr uint32_t kMaxPageSize = 0x8000;

// Node: data size or child page (low and high u16s), flags (u16; a branch
// node's hold bits 32-47 of its child's page number), key size (u16), key,
// then a leaf's value (or the first overflow page number of a big one).
constexpr size_t kNodeHeaderBytes = 8;
constexpr uint16_t kBigDataNode = 0x01;
constexpr uint16_t kSubDatabaseNode = 0x02;
constexpr uint16_t kDuplicatesNode = 0x04;

// liblmdb's cursor stack holds 32 pages.
constexpr int kMaxTreeDepth = 32;

template <typename T>
T LoadAt(const unsigned char* bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof(T));
  return value;
}

struct Meta {
  uint16_t page_flags = 0;
  uint32_t magic = 0;
  uint32_t version = 0;
  uint32_t page_size = 0;
  uint16_t environment_flags = 0;
  uint16_t main_flags = 0;
  uint64_t main_root = kNoPage;
  uint64_t free_root = kNoPage;
  uint64_t last_page = 0;
  uint64_t txn_id = 0;
};

Meta ParseMeta(const unsigned char* page) {
  Meta meta;
  meta.page_flags = LoadAt<uint16_t>(page, kFlagsOffset);
  meta.magic = LoadAt<uint32_t>(page, kMagicOffset);
  meta.version = LoadAt<uint32_t>(page, kVersionOffset);
  const size_t free_db = kDatabasesOffset;
  const size_t main_db = kDatabasesOffset + kDatabaseBytes;
  meta.page_size = LoadAt<uint32_t>(page, free_db);
  meta.environment_flags = LoadAt<uint16_t>(page, free_db + kDatabaseFlagsOffset);
  meta.main_flags = LoadAt<uint16_t>(page, main_db + kDatabaseFlagsOffset);
  meta.main_root = LoadAt<uint64_t>(page, main_db + kDatabaseRootOffset);
  meta.free_root = LoadAt<uint64_t>(page, free_db + kDatabaseRootOffset);
  meta.last_page = LoadAt<uint64_t>(page, kLastPageOffset);
  meta.txn_id = LoadAt<uint64_t>(page, kTxnIdOffset);
  return meta;
}

class DataFile {
 public:
  explicit DataFile(const std::string& path) : path_(path) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return;
    struct stat info;
    if (fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
      close(fd_);
      fd_ = -1;
      DOPPIO_THROW("lmdb data file '", path_, "' is not a regular file");
    }
    size_ = static_cast<uint64_t>(info.st_size);
  }
  ~DataFile() {
    if (fd_ >= 0) close(fd_);
  }
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  bool exists() const { return fd_ >= 0; }
  uint64_t size() const { return size_; }

  // Reads exactly `count` bytes at `offset`, which the caller has checked
  // against size().
  void Read(uint64_t offset, size_t count, unsigned char* out) const {
    size_t done = 0;
    while (done < count) {
      const ssize_t got = pread(fd_, out + done, count - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        DOPPIO_THROW("cannot read ", count, " bytes at offset ", offset, " of lmdb data file '",
                     path_, "': ", got < 0 ? std::strerror(errno) : "unexpected end of file");
      }
      done += static_cast<size_t>(got);
    }
  }

  [[noreturn]] void Corrupt(const std::string& what) const {
    DOPPIO_THROW("lmdb data file '", path_, "' is damaged or not an lmdb file: ", what);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

void CheckMetaHeader(const DataFile& file, const Meta& meta, int index) {
  if ((meta.page_flags & kMetaPage) == 0 || meta.magic != kMagic) {
    file.Corrupt(MakeString("meta page ", index, " lacks the lmdb meta flag or magic number"));
  }
  if (meta.version != kDataVersion) {
    file.Corrupt(MakeString("meta page ", index, " has data format version ", meta.version,
                            "; this liblmdb reads version ", kDataVersion));
  }
}

// Walks the trees of the main and the free-page database from their roots,
// checking every page before descending into it, then checks the free pages
// the free-page database lists: liblmdb hands them out to its next write
// transaction without looking, so a damaged freelist would make it write
// over a meta page, a live page or past the end of the map.
class TreeCheck {
 public:
  TreeCheck(const DataFile& file, uint32_t page_size, uint64_t last_page)
      : file_(file),
        page_size_(page_size),
        last_page_(last_page),
        seen_(static_cast<size_t>(last_page) + 1, false),
        page_(page_size) {}

  // `free_db`: the tree is the free-page database's (keys are transaction
  // ids, values lists of free pages), whose free pages are collected.
  void Run(uint64_t root, bool free_db) {
    free_db_ = free_db;
    pending_.push_back({root, 1});
    while (!pending_.empty()) {
      const Pending next = pending_.back();
      pending_.pop_back();
      CheckPage(next.page, next.depth);
    }
  }

  // After both trees: every listed free page is a data page that no tree
  // uses and that is listed once.
  void CheckFreePages() const {
    std::vector<bool> listed(seen_.size(), false);
    for (const uint64_t page : free_pages_) {
      if (page < 2 || page > last_page_) {
        file_.Corrupt(MakeString("the freelist holds page ", page,
                                 ", outside the data pages [2, ", last_page_, "]"));
      }
      if (seen_[page]) {
        file_.Corrupt(MakeString("the freelist holds page ", page, ", which a tree uses"));
      }
      if (listed[page]) file_.Corrupt(MakeString("the freelist holds page ", page, " twice"));
      listed[page] = true;
    }
  }

 private:
  struct Pending {
    uint64_t page;
    int depth;
  };

  void CheckPageNumber(uint64_t page, const char* what) const {
    // Pages 0 and 1 are the metas.
    if (page < 2 || page > last_page_) {
      file_.Corrupt(MakeString(what, " page ", page, " is outside the data pages [2, ",
                               last_page_, "]"));
    }
  }

  void CheckPage(uint64_t page, int depth) {
    CheckPageNumber(page, TreeName());
    if (seen_[page]) {
      file_.Corrupt(MakeString(TreeName(), " page ", page, " is reached twice in the trees"));
    }
    seen_[page] = true;
    unsigned char* bytes = page_.data();
    file_.Read(page * page_size_, page_size_, bytes);
    const uint64_t stored = LoadAt<uint64_t>(bytes, 0);
    const uint16_t flags = LoadAt<uint16_t>(bytes, kFlagsOffset) & ~kIgnoredPageBits;
    if (stored != page) {
      file_.Corrupt(MakeString(TreeName(), " page ", page, " says it is page ", stored));
    }
    if (flags != kBranchPage && flags != kLeafPage) {
      file_.Corrupt(MakeString("page ", page, " has flags 0x", std::hex, flags,
                               ", not those of a branch or leaf page"));
    }
    const uint16_t lower = LoadAt<uint16_t>(bytes, kLowerOffset);
    const uint16_t upper = LoadAt<uint16_t>(bytes, kUpperOffset);
    if (lower < kPageHeaderBytes || lower > upper || upper > page_size_ ||
        (lower - kPageHeaderBytes) % 2 != 0) {
      file_.Corrupt(MakeString("page ", page, " has free-space bounds [", lower, ", ", upper,
                               ") that do not fit a ", page_size_, "-byte page"));
    }
    const size_t nodes = (lower - kPageHeaderBytes) / 2;
    if (nodes == 0) file_.Corrupt(MakeString("page ", page, " holds no nodes"));
    const bool branch = flags == kBranchPage;
    if (branch && depth >= kMaxTreeDepth) {
      file_.Corrupt(MakeString("the tree is deeper than ", kMaxTreeDepth, " pages at page ",
                               page));
    }
    for (size_t i = 0; i < nodes; ++i) {
      CheckNode(bytes, page, i, upper, branch, depth);
    }
  }

  void CheckNode(const unsigned char* bytes, uint64_t page, size_t index, uint16_t upper,
                 bool branch, int depth) {
    const uint64_t offset = LoadAt<uint16_t>(bytes, kPageHeaderBytes + 2 * index);
    auto fail = [&](const std::string& what) {
      file_.Corrupt(MakeString("node ", index, " of ", TreeName(), " page ", page, " ", what));
    };
    if (offset < upper || offset % 2 != 0 || offset + kNodeHeaderBytes > page_size_) {
      fail(MakeString("starts at offset ", offset, ", outside the page's nodes [", upper,
                      ", ", page_size_, ")"));
    }
    const unsigned char* node = bytes + offset;
    const uint64_t low = LoadAt<uint16_t>(node, 0);
    const uint64_t high = LoadAt<uint16_t>(node, 2);
    const uint16_t node_flags = LoadAt<uint16_t>(node, 4);
    const uint64_t key_size = LoadAt<uint16_t>(node, 6);
    const uint64_t key_end = offset + kNodeHeaderBytes + key_size;
    if (key_end > page_size_) fail(MakeString("has a ", key_size, "-byte key past the page"));
    if (branch) {
      const uint64_t child = low | (high << 16) | (uint64_t{node_flags} << 32);
      CheckPageNumber(child, "child");
      pending_.push_back({child, depth + 1});
      return;
    }
    if (node_flags & (kSubDatabaseNode | kDuplicatesNode)) {
      fail("holds a sub-database or sorted duplicates, which plain key/value dbs never have");
    }
    if (free_db_ && key_size != sizeof(uint64_t)) {
      fail(MakeString("has a ", key_size,
                      "-byte key; freelist keys are 8-byte transaction ids"));
    }
    const uint64_t value_size = low | (high << 16);
    if ((node_flags & kBigDataNode) == 0) {
      if (key_end + value_size > page_size_) {
        fail(MakeString("has a ", value_size, "-byte value past the page"));
      }
      if (free_db_) CollectFreePages(node + kNodeHeaderBytes + key_size, value_size, page);
      return;
    }
    if (key_end + sizeof(uint64_t) > page_size_) fail("has its overflow page number past the page");
    const uint64_t first = LoadAt<uint64_t>(node, kNodeHeaderBytes + key_size);
    CheckOverflow(first, value_size);
    if (free_db_) {
      std::vector<unsigned char> value(value_size);
      file_.Read(first * page_size_ + kPageHeaderBytes, value_size, value.data());
      CollectFreePages(value.data(), value_size, first);
    }
  }

  // A freelist value: a count n (u64), then n page numbers (u64 each), in
  // the value's first 8 * (n + 1) bytes (liblmdb may reserve more).
  void CollectFreePages(const unsigned char* value, uint64_t value_size, uint64_t page) {
    const uint64_t count = value_size < sizeof(uint64_t) ? 0 : LoadAt<uint64_t>(value, 0);
    if (value_size < sizeof(uint64_t) || count > value_size / sizeof(uint64_t) - 1) {
      file_.Corrupt(MakeString("a freelist record on page ", page, " lists ", count,
                               " pages in ", value_size, " bytes"));
    }
    for (uint64_t i = 1; i <= count; ++i) {
      free_pages_.push_back(LoadAt<uint64_t>(value, i * sizeof(uint64_t)));
    }
  }

  const char* TreeName() const { return free_db_ ? "freelist" : "tree"; }

  void CheckOverflow(uint64_t first, uint64_t value_size) {
    CheckPageNumber(first, "overflow");
    unsigned char header[kPageHeaderBytes];
    file_.Read(first * page_size_, kPageHeaderBytes, header);
    const uint16_t flags = LoadAt<uint16_t>(header, kFlagsOffset) & ~kIgnoredPageBits;
    const uint64_t pages = LoadAt<uint32_t>(header, kOverflowPagesOffset);
    if (LoadAt<uint64_t>(header, 0) != first || flags != kOverflowPage || pages == 0) {
      file_.Corrupt(MakeString("page ", first, " is not the start of an overflow run"));
    }
    if (pages - 1 > last_page_ - first) {
      file_.Corrupt(MakeString("the ", pages, " overflow pages from page ", first,
                               " run past the last page ", last_page_));
    }
    if (value_size > pages * page_size_ - kPageHeaderBytes) {
      file_.Corrupt(MakeString("a ", value_size, "-byte value does not fit its ", pages,
                               " overflow pages from page ", first));
    }
    for (uint64_t page = first; page < first + pages; ++page) {
      if (seen_[page]) {
        file_.Corrupt(MakeString("overflow page ", page, " is reached twice in the trees"));
      }
      seen_[page] = true;
    }
  }

  const DataFile& file_;
  const uint64_t page_size_;
  const uint64_t last_page_;
  std::vector<bool> seen_;
  std::vector<unsigned char> page_;
  std::vector<Pending> pending_;
  bool free_db_ = false;
  std::vector<uint64_t> free_pages_;
};

}  // namespace

void CheckLMDBDataFile(const std::string& directory) {
  const DataFile file(directory + "/data.mdb");
  if (!file.exists()) return;
  if (file.size() < kMetaBytes) {
    file.Corrupt(MakeString("its ", file.size(), " bytes cannot hold a meta page"));
  }
  unsigned char bytes[kMetaBytes];
  file.Read(0, kMetaBytes, bytes);
  const Meta first = ParseMeta(bytes);
  CheckMetaHeader(file, first, 0);
  const uint32_t page_size = first.page_size;
  if (page_size < kMinPageSize || page_size > kMaxPageSize ||
      (page_size & (page_size - 1)) != 0) {
    file.Corrupt(MakeString("page size ", page_size, " is not a power of two in [",
                            kMinPageSize, ", ", kMaxPageSize, "]"));
  }
  if (file.size() < 2 * uint64_t{page_size}) {
    file.Corrupt(MakeString("its ", file.size(), " bytes cannot hold the two ", page_size,
                            "-byte meta pages"));
  }
  file.Read(page_size, kMetaBytes, bytes);
  const Meta second = ParseMeta(bytes);
  CheckMetaHeader(file, second, 1);
  if (second.page_size != page_size) {
    file.Corrupt(MakeString("the meta pages disagree on the page size (", page_size, " and ",
                            second.page_size, ")"));
  }

  // liblmdb reads the meta with the higher transaction id (the first on a
  // tie).
  const Meta& meta = second.txn_id > first.txn_id ? second : first;
  const uint64_t pages_in_file = file.size() / page_size;
  if (meta.last_page < 1 || meta.last_page >= pages_in_file) {
    file.Corrupt(MakeString("the last page is ", meta.last_page, " but the file holds ",
                            pages_in_file, " pages (truncated?)"));
  }
  if (meta.environment_flags != 0 && meta.environment_flags != kIntegerKeyFlag) {
    file.Corrupt(MakeString("environment flags 0x", std::hex, meta.environment_flags,
                            " (a fixed-address map?) are not supported"));
  }
  if (meta.main_flags != 0) {
    file.Corrupt(MakeString("the main database has flags 0x", std::hex, meta.main_flags,
                            " (duplicate or integer keys); Caffe2 dbs have none"));
  }
  TreeCheck trees(file, page_size, meta.last_page);
  // kNoPage: an empty database.
  if (meta.main_root != kNoPage) trees.Run(meta.main_root, /*free_db=*/false);
  if (meta.free_root != kNoPage) trees.Run(meta.free_root, /*free_db=*/true);
  trees.CheckFreePages();
}

}  // namespace db
}  // namespace doppio
