// .npy reading and writing. Expected bytes are written out by hand here from
// NumPy's format specification (and checked against numpy 1.24's np.save),
// never produced by the code under test. NumPy interop in both directions is
// covered by tests/tools/run_net_test.py.

#include "core/npy.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/enforce.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

// A .npy file from its parts: magic, version, little-endian header length,
// the dict text padded (as numpy does) with spaces and a final newline to a
// multiple of 64 bytes, then the data.
std::string MakeNpy(const std::string& dict, const std::string& data = "", int major = 1) {
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t preamble = 8 + length_bytes;
  size_t total = preamble + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  const size_t header_size = total - preamble;
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < length_bytes; ++i) {
    out += static_cast<char>((header_size >> (8 * i)) & 0xff);
  }
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out + data;
}

std::string Dict(const std::string& descr, const std::string& shape,
                 const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape +
         ", }";
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Expects parsing `bytes` to fail with a message naming the source and
// containing `expected`.
void ExpectParseError(const std::string& bytes, const std::string& expected) {
  const std::string source = "hostile.npy";
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ParseNpy(bytes, source); }), source, expected);
}

TEST(NpyWriteTest, HeaderIsNumpysByteForByte) {
  Tensor tensor({2, 3}, DataType::kFloat);
  float* data = tensor.mutable_data<float>();
  for (int i = 0; i < 6; ++i) data[i] = static_cast<float>(i);
  const std::string encoded = EncodeNpy(tensor);
  // np.save(np.arange(6, dtype=np.float32).reshape(2, 3)): a 128-byte header.
  std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
  expected += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expected.append(128 - expected.size() - 1, ' ');
  expected += '\n';
  expected += Bytes<float>({0, 1, 2, 3, 4, 5});
  EXPECT_EQ(encoded, expected);
}

TEST(NpyWriteTest, ScalarAndOneDimShapesUsePythonTupleSyntax) {
  Tensor scalar(std::vector<int64_t>{}, DataType::kBool);
  *scalar.mutable_data<bool>() = true;
  EXPECT_EQ(EncodeNpy(scalar), MakeNpy(Dict("|b1", "()"), std::string("\x01", 1)));

  Tensor vector({3}, DataType::kInt16);
  int16_t* values = vector.mutable_data<int16_t>();
  values[0] = 0;
  values[1] = 1;
  values[2] = -2;
  EXPECT_EQ(EncodeNpy(vector), MakeNpy(Dict("<i2", "(3,)"), Bytes<int16_t>({0, 1, -2})));
}

TEST(NpyWriteTest, StringTensorsAreRefused) {
  Tensor strings({1}, DataType::kString);
  strings.mutable_data<std::string>()[0] = "x";
  EXPECT_THROW(EncodeNpy(strings), Error);
  const std::string path = TempDir("strings") + "/strings.npy";
  EXPECT_MESSAGE_HAS(ErrorOf([&] { WriteNpyFile(strings, path); }), path);
}

// `raw` holds the elements' bytes (4 elements, read as a 2x2 tensor).
template <typename T>
void ExpectRoundTrip(const std::string& raw, const std::string& descr) {
  ASSERT_EQ(raw.size(), 4 * sizeof(T)) << descr;
  const std::vector<int64_t> dims = {2, 2};
  Tensor tensor(dims, DataTypeFor<T>());
  std::memcpy(tensor.mutable_data<T>(), raw.data(), raw.size());

  // The encoding matches the spec's bytes for this dtype ...
  ASSERT_EQ(EncodeNpy(tensor), MakeNpy(Dict(descr, "(2, 2)"), raw)) << descr;

  // ... and reads back, from memory and from a file, unchanged.
  const std::string path = TempDir("roundtrip") + "/" + descr.substr(1) + ".npy";
  WriteNpyFile(tensor, path);
  for (const Tensor& back : {ParseNpy(EncodeNpy(tensor), "memory"), ReadNpyFile(path)}) {
    ASSERT_EQ(back.dtype(), DataTypeFor<T>()) << descr;
    ASSERT_EQ(back.dims(), dims) << descr;
    EXPECT_EQ(std::string(static_cast<const char*>(back.raw_data()), raw.size()), raw)
        << descr;
  }
}

TEST(NpyRoundTripTest, EveryDtype) {
  ExpectRoundTrip<float>(Bytes<float>({1.5f, -2.0f, 3.25f, 1e-30f}), "<f4");
  ExpectRoundTrip<double>(Bytes<double>({1.5, -2.0, 3.25, 1e-300}), "<f8");
  ExpectRoundTrip<float16>(Bytes<uint16_t>({0x3c00, 0xc000, 0x7c00, 0x0001}), "<f2");
  ExpectRoundTrip<int8_t>(Bytes<int8_t>({-128, 127, 0, -1}), "|i1");
  ExpectRoundTrip<int16_t>(Bytes<int16_t>({-32768, 32767, 0, -1}), "<i2");
  ExpectRoundTrip<int32_t>(Bytes<int32_t>({INT32_MIN, INT32_MAX, 0, -1}), "<i4");
  ExpectRoundTrip<int64_t>(Bytes<int64_t>({INT64_MIN, INT64_MAX, 0, -1}), "<i8");
  ExpectRoundTrip<uint8_t>(Bytes<uint8_t>({0, 255, 1, 128}), "|u1");
  ExpectRoundTrip<uint16_t>(Bytes<uint16_t>({0, 65535, 1, 32768}), "<u2");
  ExpectRoundTrip<uint32_t>(Bytes<uint32_t>({0, 4294967295u, 1, 2147483648u}), "<u4");
  ExpectRoundTrip<uint64_t>(Bytes<uint64_t>({0, 18446744073709551615ull, 1, 1ull << 63}), "<u8");
  ExpectRoundTrip<bool>(std::string("\x01\x00\x00\x01", 4), "|b1");
}

TEST(NpyRoundTripTest, EmptyTensor) {
  Tensor empty({0, 3}, DataType::kFloat);
  empty.mutable_data<float>();
  const Tensor back = ParseNpy(EncodeNpy(empty), "empty");
  EXPECT_EQ(back.dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(back.dtype(), DataType::kFloat);
}

TEST(NpyReadTest, BigEndianDataIsByteSwapped) {
  const std::string data("\x00\x00\x01\x02\xff\xff\xff\xfe", 8);
  const Tensor tensor = ParseNpy(MakeNpy(Dict(">i4", "(2,)"), data), "be");
  ASSERT_EQ(tensor.dtype(), DataType::kInt32);
  EXPECT_EQ(tensor.data<int32_t>()[0], 0x0102);
  EXPECT_EQ(tensor.data<int32_t>()[1], -2);

  const std::string one("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8);  // 1.0
  EXPECT_EQ(ParseNpy(MakeNpy(Dict(">f8", "()"), one), "be").data<double>()[0], 1.0);
}

TEST(NpyReadTest, Versions2And3AndPython2Longs) {
  const std::string data = Bytes<uint16_t>({7, 8, 9});
  for (int major : {2, 3}) {
    const Tensor tensor = ParseNpy(MakeNpy(Dict("<u2", "(3L,)"), data, major), "v");
    EXPECT_EQ(tensor.dims(), std::vector<int64_t>{3});
    EXPECT_EQ(tensor.data<uint16_t>()[2], 9);
  }
}

TEST(NpyReadTest, KeysInAnyOrderAndDoubleQuotes) {
  const std::string dict = "{\"shape\": (1, 1), \"fortran_order\": False, \"descr\": \"<i8\"}";
  const Tensor tensor = ParseNpy(MakeNpy(dict, Bytes<int64_t>({42})), "order");
  EXPECT_EQ(tensor.data<int64_t>()[0], 42);
}

TEST(NpyReadTest, NonCanonicalBoolsBecomeTrue) {
  const Tensor tensor = ParseNpy(MakeNpy(Dict("|b1", "(2,)"), std::string("\x00\x07", 2)), "b");
  const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data<bool>());
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 1);
}

TEST(NpyReadTest, FortranOrderWithTrivialLayoutIsAccepted) {
  const Tensor tensor =
      ParseNpy(MakeNpy(Dict("<f4", "(1, 3)", "True"), Bytes<float>({1, 2, 3})), "f");
  EXPECT_EQ(tensor.data<float>()[2], 3.0f);
}

TEST(NpyHostileTest, BadMagic) {
  std::string bytes = MakeNpy(Dict("<f4", "(1,)"), Bytes<float>({1}));
  bytes[1] = 'X';
  ExpectParseError(bytes, "not a .npy file");
  ExpectParseError("", "not a .npy file");
  ExpectParseError("PK\x03\x04", "not a .npy file");
}

TEST(NpyHostileTest, TruncatedPreamble) {
  ExpectParseError(std::string("\x93NUMPY", 6), "truncated");
  ExpectParseError(std::string("\x93NUMPY\x01\x00\x10", 9), "truncated");
}

TEST(NpyHostileTest, UnsupportedVersion) {
  std::string bytes = MakeNpy(Dict("<f4", "(1,)"), Bytes<float>({1}));
  bytes[6] = 4;
  ExpectParseError(bytes, "version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  ExpectParseError(bytes, "version 1.1");
}

TEST(NpyHostileTest, TruncatedData) {
  ExpectParseError(MakeNpy(Dict("<f4", "(2, 3)"), Bytes<float>({1, 2, 3})),
                   "truncated .npy file: the header promises 24 bytes");
}

TEST(NpyHostileTest, TrailingBytes) {
  ExpectParseError(MakeNpy(Dict("<f4", "(1,)"), Bytes<float>({1, 2})), "unexpected bytes");
}

TEST(NpyHostileTest, FortranOrder) {
  ExpectParseError(MakeNpy(Dict("<f4", "(2, 3)", "True"), Bytes<float>({1, 2, 3, 4, 5, 6})),
                   "Fortran");
}

TEST(NpyHostileTest, AbsurdShapes) {
  // Product overflows int64.
  ExpectParseError(MakeNpy(Dict("<f4", "(4294967296, 4294967296)")), "more elements");
  // Fits int64 but is beyond the tensor cap (8e12 bytes > 16 GiB): refused
  // from the header, before the file's size is even looked at.
  ExpectParseError(MakeNpy(Dict("<f8", "(1000000000000,)")), "DOPPIO_MAX_TENSOR_BYTES");
  // Within the cap but far beyond the file: no allocation may be attempted.
  ExpectParseError(MakeNpy(Dict("<f8", "(1000000000,)")), "truncated");
  // A dim that does not fit int64 at all.
  ExpectParseError(MakeNpy(Dict("<f4", "(99999999999999999999,)")), "integer too large");
  // Too many dims.
  std::string many = "(";
  for (int i = 0; i < 100; ++i) many += "1, ";
  ExpectParseError(MakeNpy(Dict("<f4", many + ")"), Bytes<float>({1})), "dims");
}

TEST(NpyHostileTest, NegativeDims) {
  ExpectParseError(MakeNpy(Dict("<f4", "(-1, 2)")), "negative dimension");
}

TEST(NpyHostileTest, HeaderLengthBeyondFile) {
  std::string bytes = MakeNpy(Dict("<f4", "(1,)"), Bytes<float>({1}));
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  ExpectParseError(bytes, "runs past the end of the file");
  // A version 2 header length of 4 GiB is refused without reading it.
  std::string v2 = MakeNpy(Dict("<f4", "(1,)"), Bytes<float>({1}), 2);
  v2[8] = v2[9] = v2[10] = v2[11] = '\xff';
  ExpectParseError(v2, "implausibly large");
}

TEST(NpyHostileTest, UnsupportedDescr) {
  ExpectParseError(MakeNpy(Dict("<c8", "(1,)"), std::string(8, '\0')), "unsupported .npy dtype '<c8'");
  ExpectParseError(MakeNpy(Dict("<U3", "(1,)"), std::string(12, '\0')), "unsupported .npy dtype");
  ExpectParseError(MakeNpy(Dict("<f16", "(1,)"), std::string(16, '\0')), "unsupported .npy dtype");
  ExpectParseError(MakeNpy(Dict("|O", "(1,)"), std::string(8, '\0')), "unsupported .npy dtype");
  const std::string structured =
      "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }";
  ExpectParseError(MakeNpy(structured, std::string(8, '\0')), "structured");
}

TEST(NpyHostileTest, MalformedHeaderDicts) {
  ExpectParseError(MakeNpy("not a dict"), "malformed .npy header");
  ExpectParseError(MakeNpy("{'descr': '<f4', 'shape': (1,)}"), "lacks the 'fortran_order' key");
  ExpectParseError(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
                   "unexpected key 'x'");
  ExpectParseError(MakeNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                           "'shape': (1,)}"),
                   "duplicate key");
  ExpectParseError(MakeNpy(Dict("<f4", "[1]")), "not a tuple");
  ExpectParseError(MakeNpy(Dict("<f4", "(1.5,)")), "malformed");
  ExpectParseError(MakeNpy(Dict("<f4", "('a',)")), "not only ints");
  ExpectParseError(MakeNpy(Dict("<f4", "(1,)", "1")), "'fortran_order' is an int");
  ExpectParseError(MakeNpy("{'descr': '<f4, 'fortran_order': False}"), "malformed");
  ExpectParseError(MakeNpy(Dict("<f4", "(1,)") + " trailing"), "after the header dict");
  ExpectParseError(MakeNpy(std::string(5000, '(')), "malformed");
  ExpectParseError(MakeNpy("{'descr': " + std::string(5000, '(')), "nested too deeply");
}

TEST(NpyFileTest, ErrorsNameTheFile) {
  const std::string directory = TempDir("errors");
  const std::string missing = directory + "/does_not_exist.npy";
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ReadNpyFile(missing); }), missing);

  const std::string truncated = directory + "/truncated.npy";
  WriteBytes(truncated, MakeNpy(Dict("<f8", "(4,)"), Bytes<double>({1, 2})));
  EXPECT_MESSAGE_HAS(ErrorOf([&] { ReadNpyFile(truncated); }), truncated, "truncated");

  EXPECT_THROW(ReadNpyFile(directory), Error);
}

TEST(NpyFileTest, WrittenFileHasExactlyTheEncodedBytes) {
  Tensor tensor({2}, DataType::kInt32);
  tensor.mutable_data<int32_t>()[0] = 5;
  tensor.mutable_data<int32_t>()[1] = -5;
  const std::string path = TempDir("written") + "/written.npy";
  WriteNpyFile(tensor, path);
  EXPECT_EQ(ReadBytes(path), MakeNpy(Dict("<i4", "(2,)"), Bytes<int32_t>({5, -5})));
}

}  // namespace
}  // namespace doppio
