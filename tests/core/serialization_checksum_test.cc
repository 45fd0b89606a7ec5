// The per-record CRC-32C of checkpoints: the checksum itself against the
// published CRC-32C check values and a bit-by-bit reference written here,
// the field as protobuf sees it, and ParseCheckedRecord on intact, damaged
// and checksum-less (Caffe2) records.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "core/serialization_checksum.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorIfAny;
using testing::ErrorOf;

// CRC-32C one bit at a time, straight from the definition (reflected
// Castagnoli polynomial, initial value and final xor all ones).
uint32_t ReferenceCrc32c(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  return ~crc;
}

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(generator() & 0xff);
  return bytes;
}

BlobProto FloatBlob(const std::string& name, int elements) {
  BlobProto blob;
  blob.set_name(name);
  blob.set_type("Tensor");
  TensorProto* tensor = blob.mutable_tensor();
  tensor->add_dims(elements);
  tensor->set_data_type(TensorProto::FLOAT);
  for (int i = 0; i < elements; ++i) tensor->add_float_data(0.25f * i - 3.0f);
  tensor->set_name(name);
  return blob;
}

TEST(Crc32cTest, PublishedCheckValues) {
  // The standard check value, and RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0').data(), 32), 0x8a9136aau);
  EXPECT_EQ(Crc32c(std::string(32, '\xff').data(), 32), 0x62a8ab43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(ascending.data(), 32), 0x46dd794eu);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, MatchesTheBitwiseDefinitionAtEveryLengthAndOffset) {
  const std::string data = RandomBytes(300, 7);
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t size = 0; offset + size <= data.size(); size += 13) {
      const std::string piece = data.substr(offset, size);
      ASSERT_EQ(Crc32c(data.data() + offset, size), ReferenceCrc32c(piece))
          << "offset " << offset << " size " << size;
    }
  }
  // Continuing a checksum equals checksumming the concatenation.
  const std::string a = data.substr(0, 77), b = data.substr(77);
  EXPECT_EQ(Crc32c(b.data(), b.size(), Crc32c(a.data(), a.size())), ReferenceCrc32c(data));
}

TEST(RecordChecksumTest, TheFieldIsAnUnknownFixed32HoldingTheCrcOfKeyAndBlob) {
  const std::string key = "gpu_0/fc_w#%0";
  const std::string value = FloatBlob("gpu_0/fc_w", 10).SerializeAsString();
  const std::string record = AppendRecordChecksum(key, value);
  ASSERT_EQ(record.substr(6), value) << "six bytes of field, then the blob bytes unchanged";

  BlobProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(record));
  const auto& unknown = parsed.GetReflection()->GetUnknownFields(parsed);
  ASSERT_EQ(unknown.field_count(), 1);
  EXPECT_EQ(unknown.field(0).number(), 2001);
  ASSERT_EQ(unknown.field(0).type(), google::protobuf::UnknownField::TYPE_FIXED32);
  EXPECT_EQ(unknown.field(0).fixed32(), ReferenceCrc32c(key + value));
  // Apart from the unknown field, the message is the one that was saved.
  BlobProto without = parsed;
  without.GetReflection()->MutableUnknownFields(&without)->Clear();
  EXPECT_EQ(without.SerializeAsString(), value);
}

TEST(RecordChecksumTest, IntactRecordsVerifyAndRecordsWithoutOneParseUnverified) {
  const std::string key = "w#%0";
  const BlobProto blob = FloatBlob("w", 5);
  BlobProto parsed;
  EXPECT_TRUE(ParseCheckedRecord(key, AppendRecordChecksum(key, blob.SerializeAsString()),
                                 &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), blob.SerializeAsString());
  EXPECT_FALSE(ParseCheckedRecord(key, blob.SerializeAsString(), &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), blob.SerializeAsString());
}

TEST(RecordChecksumTest, EveryBitFlipIsCaught) {
  const std::string key = "w#%0";
  const BlobProto blob = FloatBlob("w", 6);
  const std::string intact = AppendRecordChecksum(key, blob.SerializeAsString());
  for (size_t byte = 0; byte < intact.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = intact;
      damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
      BlobProto parsed;
      const std::string error = ErrorIfAny([&] { ParseCheckedRecord(key, damaged, &parsed); });
      // In the data or the checksum the CRC catches it; in the field's tag,
      // the record no longer starts like any BlobProto.
      ASSERT_FALSE(error.empty()) << "undetected flip at byte " << byte << " bit " << bit;
      EXPECT_NE(error.find("record 'w#%0'"), std::string::npos) << error;
    }
  }
  // A damaged key is caught too: the key is part of what is checksummed.
  BlobProto parsed;
  EXPECT_NE(ErrorOf([&] { ParseCheckedRecord("v#%0", intact, &parsed); })
                .find("checksum does not match"),
            std::string::npos);
}

TEST(RecordChecksumTest, Caffe2RecordsHoldingTheFieldsBytesStillLoad) {
  // A BYTE tensor's data ends the record, so its last six bytes can be
  // anything -- here exactly the field's tag and four arbitrary bytes. Only
  // the front of a record says whether it has a checksum.
  BlobProto blob;
  blob.set_name("b");
  blob.set_type("Tensor");
  TensorProto* tensor = blob.mutable_tensor();
  tensor->add_dims(8);
  tensor->set_data_type(TensorProto::BYTE);
  tensor->set_byte_data(std::string("\x01\x02\x8d\x7d\x11\x22\x33\x44", 8));
  const std::string value = blob.SerializeAsString();
  ASSERT_EQ(value.substr(value.size() - 6, 2), std::string("\x8d\x7d", 2));
  BlobProto parsed;
  EXPECT_FALSE(ParseCheckedRecord("b", value, &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), value);
}

TEST(RecordChecksumTest, MisplacedOrGarbledRecordsAreErrors) {
  const std::string key = "w";
  const BlobProto blob = FloatBlob("w", 3);
  BlobProto parsed;
  const std::string checksummed = AppendRecordChecksum(key, blob.SerializeAsString());
  const std::string misplaced = blob.SerializeAsString() + checksummed.substr(0, 6);
  EXPECT_NE(ErrorOf([&] { ParseCheckedRecord(key, misplaced, &parsed); })
                .find("checksum field is not at the start"),
            std::string::npos);
  const std::string twice = checksummed.substr(0, 6) + AppendRecordChecksum(key, "");
  EXPECT_NE(ErrorOf([&] { ParseCheckedRecord(key, twice, &parsed); }).find("record 'w'"),
            std::string::npos);
  for (const std::string& garbage :
       {std::string("\xff\xff\xff\xff"), std::string("\x0a\xff")}) {
    EXPECT_NE(ErrorOf([&] { ParseCheckedRecord(key, garbage, &parsed); })
                  .find("is not a valid BlobProto"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace doppio
