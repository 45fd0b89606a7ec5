// Fuzz target: bytes -> the data.mdb of an lmdb directory -> cursor, sharded
// DBReader and the Load op. The lock file is removed before every input, so
// each one starts from the same state.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "tests/fuzz/db_fuzz_util.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  doppio::fuzz::SetUpOnce();
  const std::string dir = doppio::fuzz::ScratchDir::Path() + "/input.lmdb";
  std::filesystem::create_directories(dir);
  unlink((dir + "/lock.mdb").c_str());
  doppio::fuzz::WriteFileOrDie(dir + "/data.mdb", data, size);
  doppio::fuzz::ReadDBEveryWay("lmdb", dir);
  return 0;
}
