// A CRC-32C per checkpoint record, invisible to Caffe2.
//
// Save puts one extra field in front of each record's serialized BlobProto:
// field number kRecordChecksumField, wire type fixed32, holding the CRC-32C
// (Castagnoli) of the record's key bytes followed by the BlobProto bytes
// after the field. Caffe2's BlobProto ends at field 7 and never used that
// number, so Caffe2's parser (and ours: doppio.proto does not declare it
// either) keeps it as an unknown field and reads the blob unchanged.
//
// In front, not behind: protobuf writers put a message's known fields first,
// in field-number order, so a record Caffe2 wrote always starts with the tag
// of one of fields 1-7 and never with this field's tag. Whether a record has
// a checksum is then never in doubt, whatever bytes a Caffe2 record ends with.
//
// Load checks it: a record whose checksum does not match, that carries the
// field anywhere but in front, or that starts with neither the field nor one
// of BlobProto's own fields (a damaged tag) is corrupt. Records without the
// field (every file Caffe2 wrote) load as before, unverified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "proto/doppio.pb.h"

namespace doppio {

constexpr int kRecordChecksumField = 2001;

// CRC-32C of `size` bytes, continuing from `crc` (0 to start). Uses the
// SSE 4.2 instruction where the CPU has it.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// `value` (a serialized BlobProto stored under `key`) with the checksum
// field in front.
std::string AppendRecordChecksum(const std::string& key, const std::string& value);

// Parses a record's value into *proto, verifying its checksum when it has
// one. Returns whether it had one. Throws an Error naming `key` when the
// record is not a BlobProto or its checksum does not match; callers add the
// file and the blob.
bool ParseCheckedRecord(const std::string& key, const std::string& value, BlobProto* proto);

}  // namespace doppio
