// Helpers every C++ test may use: the shared Caffe2 vectors, files and
// scratch directories, catching doppio::Errors, building OperatorDefs, and
// minidb records written out by hand (independently of core/db_minidb.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/enforce.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace testing {

// ---- files ----

// A vector made by Caffe2 under tests/testdata/caffe2_wire/ (the tests'
// data dependency), found through the runfiles tree.
inline std::string VectorPath(const std::string& name) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  return std::string(runfiles ? runfiles : ".") + "/doppio/tests/testdata/caffe2_wire/" + name;
}

// The whole file; a file that cannot be opened is a test failure (and "").
inline std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  std::ostringstream content;
  content << file.rdbuf();
  return content.str();
}

// Replaces the file's contents with `bytes`.
inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(file.good()) << "cannot write " << path;
}

// A fresh, empty directory under the test's scratch space; each test binary
// gets its own $TEST_TMPDIR, so `name` only has to be unique within it.
inline std::string TempDir(const std::string& name) {
  namespace fs = std::filesystem;
  const char* root = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(root ? root : "/tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The names in `dir`, sorted.
inline std::vector<std::string> DirectoryListing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// ---- errors ----

// The message of the doppio::Error `fn` throws, or "" when it throws none.
inline std::string ErrorIfAny(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// For calls that must fail: like ErrorIfAny, and throwing nothing is a test
// failure.
inline std::string ErrorOf(const std::function<void()>& fn) {
  bool returned = false;
  const std::string message = ErrorIfAny([&] {
    fn();
    returned = true;
  });
  if (returned) ADD_FAILURE() << "expected a doppio::Error";
  return message;
}

// Expects `message` to contain every one of `parts`.
#define EXPECT_MESSAGE_HAS(message, ...)                                        \
  do {                                                                          \
    const std::string doppio_msg_ = (message);                                  \
    for (const std::string& doppio_part_ :                                      \
         std::initializer_list<std::string>{__VA_ARGS__}) {                     \
      EXPECT_NE(doppio_msg_.find(doppio_part_), std::string::npos)              \
          << "missing '" << doppio_part_ << "' in: " << doppio_msg_;            \
    }                                                                           \
  } while (false)

// ---- building defs ----

inline Argument IntArg(const std::string& name, int64_t value) {
  Argument arg;
  arg.set_name(name);
  arg.set_i(value);
  return arg;
}
inline Argument FloatArg(const std::string& name, float value) {
  Argument arg;
  arg.set_name(name);
  arg.set_f(value);
  return arg;
}
inline Argument StringArg(const std::string& name, const std::string& value) {
  Argument arg;
  arg.set_name(name);
  arg.set_s(value);
  return arg;
}
inline Argument IntsArg(const std::string& name, const std::vector<int64_t>& values) {
  Argument arg;
  arg.set_name(name);
  for (int64_t v : values) arg.add_ints(v);
  return arg;
}
inline Argument FloatsArg(const std::string& name, const std::vector<float>& values) {
  Argument arg;
  arg.set_name(name);
  for (float v : values) arg.add_floats(v);
  return arg;
}
inline Argument StringsArg(const std::string& name, const std::vector<std::string>& values) {
  Argument arg;
  arg.set_name(name);
  for (const auto& v : values) arg.add_strings(v);
  return arg;
}

inline OperatorDef MakeOp(const std::string& type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs,
                          const std::vector<Argument>& args = {}) {
  OperatorDef def;
  def.set_type(type);
  for (const auto& input : inputs) def.add_input(input);
  for (const auto& output : outputs) def.add_output(output);
  for (const auto& arg : args) *def.add_arg() = arg;
  return def;
}

// ---- minidb records by hand ----

using MiniDBRecords = std::vector<std::pair<std::string, std::string>>;

// Little-endian int32.
inline std::string Int32LE(int32_t value) {
  const auto bits = static_cast<uint32_t>(value);
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return out;
}

// One record as Caffe2's minidb lays it out: key length, value length, key,
// value.
inline std::string MiniDBRecord(const std::string& key, const std::string& value) {
  return Int32LE(static_cast<int32_t>(key.size())) + Int32LE(static_cast<int32_t>(value.size())) +
         key + value;
}

// Splits minidb bytes into (key, value) records by the format's definition;
// bytes after the last whole record are a test failure.
inline MiniDBRecords ParseMiniDBRecords(const std::string& bytes) {
  auto length_at = [&](size_t offset) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
    }
    return static_cast<size_t>(v);
  };
  MiniDBRecords records;
  size_t at = 0;
  while (at + 8 <= bytes.size()) {
    const size_t key_length = length_at(at), value_length = length_at(at + 4);
    records.emplace_back(bytes.substr(at + 8, key_length),
                         bytes.substr(at + 8 + key_length, value_length));
    at += 8 + key_length + value_length;
  }
  EXPECT_EQ(at, bytes.size()) << "bytes after the last whole minidb record";
  return records;
}

}  // namespace testing
}  // namespace doppio
