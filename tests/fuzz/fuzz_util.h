// Shared by the fuzz targets (each a LLVMFuzzerTestOneInput): process set-up,
// scratch files, and parsing fuzz bytes as a protobuf message.
//
// A target catches doppio::Error only: that is how bad input must fail. Any
// other exception escaping, an abort, a sanitizer report or a broken
// invariant (FUZZ_CHECK) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include "core/limits.h"

// Checks an invariant of the code under test; a failure is a crash the
// fuzzer records (and the replay test reports).
#define FUZZ_CHECK(condition)                                                      \
  do {                                                                             \
    if (!(condition)) {                                                            \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, \
                   #condition);                                                    \
      std::abort();                                                                \
    }                                                                              \
  } while (false)

namespace doppio {
namespace fuzz {

// Caps lower than the defaults so that inputs claiming big tensors or nets
// meet the limit checks (the thing under test) well before libFuzzer's
// memory limit (-rss_limit_mb=2048) would report them as out-of-memory.
constexpr int64_t kFuzzMaxTensorBytes = int64_t{64} << 20;
constexpr int64_t kFuzzMaxNetOps = 500;

// Once per process: lower the caps and silence protobuf's logging (it
// prints every failed parse of a message lacking required fields, which
// fuzz inputs mostly are; the parse result is what matters).
inline void SetUpOnce() {
  static const bool done = [] {
    SetMaxTensorBytes(kFuzzMaxTensorBytes);
    SetMaxNetOps(kFuzzMaxNetOps);
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    return true;
  }();
  (void)done;
}

// A private directory for this process's scratch files, removed at exit.
// Under `bazel test` it lives in $TEST_TMPDIR.
class ScratchDir {
 public:
  static const std::string& Path() {
    static ScratchDir dir;
    return dir.path_;
  }

 private:
  ScratchDir() {
    const char* root = std::getenv("TEST_TMPDIR");
    if (root == nullptr) root = std::getenv("TMPDIR");
    std::string pattern = std::string(root ? root : "/tmp") + "/doppio-fuzz-XXXXXX";
    if (mkdtemp(&pattern[0]) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  std::string path_;
};

// Replaces `path` with the bytes; a failure here is the harness's, not the
// code's, so it aborts.
inline void WriteFileOrDie(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  file.close();
  if (!file) {
    std::fprintf(stderr, "cannot write fuzz input to %s\n", path.c_str());
    std::abort();
  }
}

// The bytes as a binary message, else as text format (the tools accept
// both). False when neither parses.
inline bool ParseBinaryOrText(const uint8_t* data, size_t size,
                              google::protobuf::Message* message) {
  if (message->ParseFromArray(data, static_cast<int>(size))) return true;
  class Silent final : public google::protobuf::io::ErrorCollector {
   public:
    void AddError(int, int, const std::string&) override {}
    void AddWarning(int, int, const std::string&) override {}
  } silent;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&silent);
  message->Clear();
  return parser.ParseFromString(
      std::string(reinterpret_cast<const char*>(data), size), message);
}

}  // namespace fuzz
}  // namespace doppio
