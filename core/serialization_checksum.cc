#include "core/serialization_checksum.h"

#include <array>
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/enforce.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace doppio {
namespace {

// Castagnoli's polynomial, bit-reversed (the order the bytes are consumed).
constexpr uint32_t kCastagnoliReversed = 0x82F63B78u;
constexpr int kFixed32WireType = 5;
constexpr size_t kChecksumBytes = 4;

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kCastagnoliReversed : 0u);
    table[byte] = crc;
  }
  return table;
}

uint32_t UpdateByTable(uint32_t state, const unsigned char* data, size_t size) {
  static const std::array<uint32_t, 256> table = MakeTable();
  for (size_t i = 0; i < size; ++i) state = table[(state ^ data[i]) & 0xffu] ^ (state >> 8);
  return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t UpdateByInstruction(uint32_t state,
                                                               const unsigned char* data,
                                                               size_t size) {
  uint64_t wide = state;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);  // records are not aligned
    wide = _mm_crc32_u64(wide, word);
    data += 8;
    size -= 8;
  }
  uint32_t narrow = static_cast<uint32_t>(wide);
  for (; size > 0; --size) narrow = _mm_crc32_u8(narrow, *data++);
  return narrow;
}

bool HasCrcInstruction() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

// The field's tag as protobuf encodes it (a varint of number << 3 | type).
std::string ChecksumTag() {
  uint32_t tag = (static_cast<uint32_t>(kRecordChecksumField) << 3) | kFixed32WireType;
  std::string bytes;
  while (tag >= 0x80) {
    bytes.push_back(static_cast<char>((tag & 0x7f) | 0x80));
    tag >>= 7;
  }
  bytes.push_back(static_cast<char>(tag));
  return bytes;
}

const std::string& Tag() {
  static const std::string tag = ChecksumTag();
  return tag;
}

uint32_t RecordCrc(const std::string& key, const char* body, size_t body_size) {
  return Crc32c(body, body_size, Crc32c(key.data(), key.size()));
}

uint32_t DecodeFixed32(const char* bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < kChecksumBytes; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return value;
}

std::string Hex(uint32_t value, int digits = 8) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%0*x", digits, value);
  return text;
}

// Whether a record may start with `byte` without a checksum: protobuf
// writers emit known fields first, in field order, so whatever Caffe2 wrote
// starts with the tag of one of BlobProto's fields 1-7 in its own wire type.
// Anything else is damage -- typically to the checksum field's tag, which
// must not make the rest of the record parse as something else.
bool StartsAField(unsigned char byte) {
  for (unsigned char tag : {0x0a, 0x12, 0x1a, 0x22, 0x2a, 0x30, 0x38}) {
    if (byte == tag) return true;
  }
  return false;
}

bool HasChecksumField(const BlobProto& proto) {
  const auto& unknown = proto.GetReflection()->GetUnknownFields(proto);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == kRecordChecksumField) return true;
  }
  return false;
}

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t state = ~crc;
#if defined(__x86_64__)
  if (HasCrcInstruction()) return ~UpdateByInstruction(state, bytes, size);
#endif
  return ~UpdateByTable(state, bytes, size);
}

std::string AppendRecordChecksum(const std::string& key, const std::string& value) {
  const uint32_t crc = RecordCrc(key, value.data(), value.size());
  std::string record;
  record.reserve(Tag().size() + kChecksumBytes + value.size());
  record.append(Tag());
  for (size_t i = 0; i < kChecksumBytes; ++i) {
    record.push_back(static_cast<char>((crc >> (8 * i)) & 0xffu));
  }
  record.append(value);
  return record;
}

bool ParseCheckedRecord(const std::string& key, const std::string& value, BlobProto* proto) {
  DOPPIO_ENFORCE(value.size() <= static_cast<size_t>(INT_MAX), "record '", key, "' is ",
                 value.size(), " bytes, more than a BlobProto can hold");
  const size_t header = Tag().size() + kChecksumBytes;
  const bool checksummed = value.size() >= header && value.compare(0, Tag().size(), Tag()) == 0;
  if (!checksummed) {
    DOPPIO_ENFORCE(value.empty() || StartsAField(static_cast<unsigned char>(value[0])),
                   "record '", key, "' is not a valid BlobProto (corrupt file?): its first byte, ",
                   Hex(static_cast<unsigned char>(value[0]), 2),
                   ", starts neither a BlobProto field nor a checksum");
    DOPPIO_ENFORCE(proto->ParseFromString(value), "record '", key,
                   "' is not a valid BlobProto (corrupt file?)");
    DOPPIO_ENFORCE(!HasChecksumField(*proto), "record '", key,
                   "' is corrupt: its checksum field is not at the start of the record");
    return false;
  }
  const char* body = value.data() + header;
  const size_t body_size = value.size() - header;
  const uint32_t stored = DecodeFixed32(value.data() + Tag().size());
  const uint32_t computed = RecordCrc(key, body, body_size);
  DOPPIO_ENFORCE(stored == computed, "record '", key, "' is corrupt: its CRC-32C checksum "
                 "does not match its content (stored ", Hex(stored), ", computed ",
                 Hex(computed), ")");
  DOPPIO_ENFORCE(proto->ParseFromArray(body, static_cast<int>(body_size)), "record '", key,
                 "' has a matching checksum but is not a valid BlobProto");
  DOPPIO_ENFORCE(!HasChecksumField(*proto), "record '", key,
                 "' is corrupt: it carries two checksum fields");
  return true;
}

}  // namespace doppio
