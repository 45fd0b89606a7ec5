// Fuzz target: bytes -> a minidb file -> cursor, sharded DBReader and the
// Load op (all chunks of every blob gathered, checked and deserialized).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/db_fuzz_util.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  doppio::fuzz::SetUpOnce();
  const std::string path = doppio::fuzz::ScratchDir::Path() + "/input.minidb";
  doppio::fuzz::WriteFileOrDie(path, data, size);
  doppio::fuzz::ReadDBEveryWay("minidb", path);
  return 0;
}
