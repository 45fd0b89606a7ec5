// Blobs to and from Caffe2's wire formats (TensorProto inside BlobProto).
//
// Tensors serialize with Caffe2's conventions: float -> float_data; int32,
// the narrow integers, bool and float16 -> int32_data; int64 -> int64_data;
// double -> double_data; string -> string_data; BYTE loads as uint8. Large
// tensors are split into chunks of `chunk_size` elements, each a TensorProto
// with `segment` set, stored under keys "NAME#%CHUNK_ID".
//
// Deserialization validates everything it reads (dims >= 0, no overflow in
// their product, the tensor's bytes within MaxTensorBytes of core/limits.h,
// data length matching the shape or segment), before allocating, since
// protos come from files we did not write.
//
// Non-tensor blobs use the serializer registries, keyed by C++ type for
// saving and by BlobProto.type for loading.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "core/blob.h"
#include "core/tensor.h"
#include "proto/doppio.pb.h"

namespace doppio {

// BlobProto.type of serialized tensors, as Caffe2 writes it.
constexpr const char* kTensorBlobType = "Tensor";
// Caffe2's chunk-key separator: "fc_w#%0", "fc_w#%1" ...
constexpr const char* kChunkIdSeparator = "#%";
// Elements per chunk by default (Caffe2's default).
constexpr int64_t kDefaultChunkSize = 1000000;
// chunk_size value meaning "one chunk, whatever the size".
constexpr int64_t kNoChunking = -1;

// Whole tensor, or elements [begin, end) with `segment` set when begin/end
// are given (end < 0 means numel).
void SerializeTensor(const Tensor& tensor, const std::string& name,
                     TensorProto* proto, int64_t begin = 0, int64_t end = -1);
// Makes `tensor` the proto's tensor. A proto with `segment` fills only its
// elements of a tensor resized to `dims` (the tensor keeps its other
// elements if it already had that shape and dtype; otherwise they are
// unspecified). For untrusted files prefer DeserializeBlobChunks, which
// checks that the chunks cover the tensor before allocating it.
void DeserializeTensor(const TensorProto& proto, Tensor* tensor);

// Receives each serialized chunk: the key ("name" or "name#%3") and the
// serialized BlobProto bytes.
using SerializationAcceptor =
    std::function<void(const std::string& key, const std::string& value)>;

// Serializes `blob` under `name`, in chunks of chunk_size elements
// (kNoChunking for one chunk).
void SerializeBlob(const Blob& blob, const std::string& name,
                   const SerializationAcceptor& acceptor,
                   int64_t chunk_size = kDefaultChunkSize);
// `block` (any shape; its elements in order) as elements [begin, begin +
// block.numel()) of a tensor of `whole_dims`: records of the whole tensor's
// dims with `segment` set, keyed "NAME#%FIRST_ELEMENT", in chunks of
// chunk_size. Each shard of a sharded optimizer state saves its block so,
// and Load given every shard's DB assembles the whole tensor.
void SerializeTensorSegment(const Tensor& block, const std::string& name,
                            const std::vector<int64_t>& whole_dims, int64_t begin,
                            const SerializationAcceptor& acceptor,
                            int64_t chunk_size = kDefaultChunkSize);
// One BlobProto's bytes for the whole blob.
std::string SerializeBlobToString(const Blob& blob, const std::string& name);
// Loads one BlobProto (possibly one chunk) into `blob`.
void DeserializeBlob(const BlobProto& proto, Blob* blob);
void DeserializeBlob(const std::string& serialized, Blob* blob);

// Loads a blob from all of its chunks (every BlobProto saved under
// "NAME#%i", in any order). Unlike chunk-by-chunk DeserializeBlob, it checks
// the chunks against each other before allocating anything: one type, one
// shape, segments tiling [0, numel) with no gap, overlap or duplicate, and
// for chunked non-tensor content every chunk id exactly once. `blob` changes
// only when everything succeeded.
void DeserializeBlobChunks(const std::vector<BlobProto>& chunks, Blob* blob);

// The blob name in a DB key: "fc_w#%3" -> "fc_w"; keys without a chunk
// suffix are returned whole.
std::string BlobNameFromChunkKey(const std::string& key);

// ---- registries for non-tensor blobs ----
class BlobSerializerBase {
 public:
  virtual ~BlobSerializerBase() = default;
  virtual void Serialize(const Blob& blob, const std::string& name,
                         const SerializationAcceptor& acceptor,
                         int64_t chunk_size) = 0;
};

class BlobDeserializerBase {
 public:
  virtual ~BlobDeserializerBase() = default;
  virtual void Deserialize(const BlobProto& proto, Blob* blob) = 0;
};

void RegisterBlobSerializer(std::type_index type,
                            std::function<std::unique_ptr<BlobSerializerBase>()> make);
void RegisterBlobDeserializer(const std::string& blob_type,
                              std::function<std::unique_ptr<BlobDeserializerBase>()> make);

// Static registration helpers: `static BlobSerializerRegisterer r(...)`.
struct BlobSerializerRegisterer {
  BlobSerializerRegisterer(std::type_index type,
                           std::function<std::unique_ptr<BlobSerializerBase>()> make) {
    RegisterBlobSerializer(type, std::move(make));
  }
};
struct BlobDeserializerRegisterer {
  BlobDeserializerRegisterer(const std::string& blob_type,
                             std::function<std::unique_ptr<BlobDeserializerBase>()> make) {
    RegisterBlobDeserializer(blob_type, std::move(make));
  }
};

}  // namespace doppio
