// Fuzz target: bytes -> BlobProto -> DeserializeBlob, and the same proto as
// the only chunk of a blob (DeserializeBlobChunks, the Load op's path), with
// every registered blob deserializer reachable through BlobProto.type.
// Multi-chunk loading is fuzzed through files by minidb_fuzz and lmdb_fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/serialization.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace doppio;
  fuzz::SetUpOnce();
  BlobProto proto;
  if (!fuzz::ParseBinaryOrText(data, size, &proto)) return 0;
  // A DBReader blob opens the db its content names: a fuzz input would make
  // this process open (and, for lmdb, write lock files in) arbitrary paths.
  if (proto.type() == "DBReader") return 0;
  try {
    Blob blob;
    DeserializeBlob(proto, &blob);
  } catch (const Error&) {
  }
  Blob blob;
  try {
    DeserializeBlobChunks({proto}, &blob);
  } catch (const Error&) {
    return 0;
  }
  // A tensor that loaded must save again; an Error escaping here is a
  // finding.
  if (blob.IsTensor()) {
    SerializeBlob(blob, "fuzz", [](const std::string&, const std::string&) {});
  }
  return 0;
}
