// Blobs to and from BlobProto: tensors in Caffe2's chunked layout, other
// types through the serializer registries, and whole-blob loading from all
// of a blob's chunks.
#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>

#include "core/serialization.h"
#include "core/serialization_internal.h"

namespace doppio {
namespace {

using SerializerMaker = std::function<std::unique_ptr<BlobSerializerBase>()>;
using DeserializerMaker = std::function<std::unique_ptr<BlobDeserializerBase>()>;

// Function-local statics: registration runs during static initialization,
// in whatever order the linker chose.
std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::type_index, SerializerMaker>& Serializers() {
  static auto* serializers = new std::map<std::type_index, SerializerMaker>();
  return *serializers;
}
std::map<std::string, DeserializerMaker>& Deserializers() {
  static auto* deserializers = new std::map<std::string, DeserializerMaker>();
  return *deserializers;
}

SerializerMaker FindSerializer(std::type_index type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Serializers().find(type);
  return it == Serializers().end() ? SerializerMaker() : it->second;
}

DeserializerMaker FindDeserializer(const std::string& blob_type) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Deserializers().find(blob_type);
  return it == Deserializers().end() ? DeserializerMaker() : it->second;
}

std::vector<std::string> KnownBlobTypes() {
  std::vector<std::string> types = {kTensorBlobType};
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const auto& entry : Deserializers()) types.push_back(entry.first);
  return types;
}

// Caffe2 files name the type; blobs from hand-made protos may only carry a
// tensor.
bool HoldsTensor(const BlobProto& proto) {
  return proto.type() == kTensorBlobType || (proto.type().empty() && proto.has_tensor());
}

std::string SerializeProto(const BlobProto& proto, const std::string& key) {
  std::string bytes;
  DOPPIO_ENFORCE(proto.SerializeToString(&bytes), "cannot encode chunk '", key,
                 "' as a BlobProto (protobuf messages must stay under 2 GB; "
                 "use a smaller chunk_size)");
  return bytes;
}

// Where a block's records place it (SerializeTensorSegment): the whole
// tensor's dims and the block's first element. Null dims: the tensor is
// the whole.
struct BlockPlace {
  const std::vector<int64_t>* whole_dims = nullptr;
  int64_t offset = 0;
};

// `tensor` in chunks of chunk_size elements, each a BlobProto with
// `segment` set, keyed as Caffe2 does ("NAME#%CHUNK_ID"), or, for a block,
// by the segment's first element in the whole: unique across the blocks of
// every shard, which are saved to different DBs and loaded together.
void SerializeTensorChunks(const Tensor& tensor, const std::string& name,
                           const SerializationAcceptor& acceptor, int64_t chunk_size,
                           const BlockPlace& place = {}) {
  const int64_t numel = tensor.numel();
  const int64_t step = chunk_size == kNoChunking ? std::max<int64_t>(numel, 1) : chunk_size;
  // Caffe2 writes one chunk even for an empty tensor: its shape must survive.
  int64_t begin = 0;
  for (int64_t chunk_id = 0;; ++chunk_id) {
    const int64_t end = numel - begin > step ? begin + step : numel;
    BlobProto proto;
    proto.set_name(name);
    proto.set_type(kTensorBlobType);
    TensorProto* chunk = proto.mutable_tensor();
    SerializeTensor(tensor, name, chunk, begin, end);
    if (place.whole_dims != nullptr) {
      chunk->clear_dims();
      for (int64_t dim : *place.whole_dims) chunk->add_dims(dim);
      chunk->mutable_segment()->set_begin(place.offset + begin);
      chunk->mutable_segment()->set_end(place.offset + end);
    }
    const std::string key = MakeString(
        name, kChunkIdSeparator, place.whole_dims != nullptr ? place.offset + begin : chunk_id);
    acceptor(key, SerializeProto(proto, key));
    if (end >= numel) break;
    begin = end;
  }
}

std::string BlobLabel(const BlobProto& proto) { return "'" + proto.name() + "'"; }

void DeserializeTensorChunks(const std::vector<BlobProto>& chunks, Blob* blob) {
  using serialization_internal::TensorLayout;
  const std::string label = BlobLabel(chunks[0]);
  std::vector<TensorLayout> layouts;
  layouts.reserve(chunks.size());
  for (const BlobProto& chunk : chunks) {
    DOPPIO_ENFORCE(chunk.has_tensor(), "blob ", label, " is of type Tensor but a chunk carries no tensor");
    layouts.push_back(serialization_internal::ValidateTensorProto(chunk.tensor()));
    const TensorLayout& first = layouts.front();
    const TensorLayout& layout = layouts.back();
    DOPPIO_ENFORCE(layout.dtype == first.dtype && layout.dims == first.dims, "blob ", label,
                   " has chunks of different shapes or types: ", DataTypeName(first.dtype),
                   first.dims, " and ", DataTypeName(layout.dtype), layout.dims);
  }
  const int64_t numel = layouts[0].numel;
  if (chunks.size() > 1) {
    for (const BlobProto& chunk : chunks) {
      DOPPIO_ENFORCE(chunk.tensor().has_segment(), "blob ", label, " has ", chunks.size(),
                     " chunks but one of them carries no segment");
    }
  }
  // The chunks must tile [0, numel) exactly: sort by begin and walk.
  std::vector<size_t> order(chunks.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return layouts[a].begin < layouts[b].begin;
  });
  DOPPIO_ENFORCE(numel > 0 || chunks.size() == 1, "blob ", label, " is empty but has ",
                 chunks.size(), " chunks");
  int64_t covered = 0;
  for (size_t index : order) {
    const TensorLayout& layout = layouts[index];
    DOPPIO_ENFORCE(numel == 0 || layout.end > layout.begin, "blob ", label,
                   " has an empty chunk [", layout.begin, ", ", layout.end, ")");
    DOPPIO_ENFORCE(layout.begin >= covered, "blob ", label, " has overlapping chunks at element ",
                   layout.begin, " (a chunk stored twice?)");
    DOPPIO_ENFORCE(layout.begin <= covered, "blob ", label, " is missing elements [", covered,
                   ", ", layout.begin, ")");
    covered = layout.end;
  }
  DOPPIO_ENFORCE(covered == numel, "blob ", label, " is missing elements [", covered, ", ", numel,
                 ") (", numel, " in dims ", layouts[0].dims, ")");

  auto tensor = std::make_unique<Tensor>(layouts[0].dims, layouts[0].dtype);
  tensor->raw_mutable_data(layouts[0].dtype);
  for (size_t i = 0; i < chunks.size(); ++i) {
    serialization_internal::FillFromProto(chunks[i].tensor(), layouts[i], tensor.get());
  }
  blob->Reset(std::move(tensor));
}

void DeserializeContentChunks(const std::vector<BlobProto>& chunks, Blob* blob) {
  const std::string label = BlobLabel(chunks[0]);
  Blob staged;
  if (chunks.size() == 1 && !chunks[0].has_content_num_chunks()) {
    DeserializeBlob(chunks[0], &staged);
    blob->Swap(staged);
    return;
  }
  const int32_t expected = chunks[0].content_num_chunks();
  DOPPIO_ENFORCE(expected > 0 && static_cast<size_t>(expected) == chunks.size(), "blob ", label,
                 " declares ", expected, " content chunks but ", chunks.size(),
                 " are present");
  std::vector<const BlobProto*> by_id(chunks.size(), nullptr);
  for (const BlobProto& chunk : chunks) {
    DOPPIO_ENFORCE(chunk.has_content_num_chunks() &&
                       chunk.content_num_chunks() == expected,
                   "blob ", label, " has chunks that disagree on content_num_chunks");
    const int32_t id = chunk.content_chunk_id();
    DOPPIO_ENFORCE(id >= 0 && id < expected, "blob ", label, " has content_chunk_id ", id,
                   " outside [0, ", expected, ")");
    DOPPIO_ENFORCE(by_id[id] == nullptr, "blob ", label, " has content chunk ", id, " twice");
    by_id[id] = &chunk;
  }
  for (const BlobProto* chunk : by_id) DeserializeBlob(*chunk, &staged);
  blob->Swap(staged);
}

}  // namespace

void RegisterBlobSerializer(std::type_index type, SerializerMaker make) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Serializers()[type] = std::move(make);
}

void RegisterBlobDeserializer(const std::string& blob_type, DeserializerMaker make) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Deserializers()[blob_type] = std::move(make);
}

void SerializeBlob(const Blob& blob, const std::string& name,
                   const SerializationAcceptor& acceptor, int64_t chunk_size) {
  DOPPIO_ENFORCE(!blob.IsEmpty(), "blob '", name,
                 "' holds nothing (it was never written), so it cannot be serialized");
  DOPPIO_ENFORCE(chunk_size > 0 || chunk_size == kNoChunking, "chunk_size for blob '",
                 name, "' must be positive, or kNoChunking (", kNoChunking, "); got ",
                 chunk_size);
  if (blob.IsTensor()) {
    SerializeTensorChunks(blob.GetTensor(), name, acceptor, chunk_size);
    return;
  }
  SerializerMaker make = FindSerializer(blob.type());
  DOPPIO_ENFORCE(static_cast<bool>(make), "blob '", name, "' holds ", blob.TypeName(),
                 ", which has no registered serializer (see RegisterBlobSerializer)");
  make()->Serialize(blob, name, acceptor, chunk_size);
}

void SerializeTensorSegment(const Tensor& block, const std::string& name,
                            const std::vector<int64_t>& whole_dims, int64_t begin,
                            const SerializationAcceptor& acceptor, int64_t chunk_size) {
  const int64_t whole = CheckedNumElements(whole_dims);
  const int64_t numel = block.numel();
  DOPPIO_ENFORCE(begin >= 0 && begin + numel <= whole, "blob '", name, "': a block of ", numel,
                 " elements at element ", begin, " does not fit the whole tensor's ", whole,
                 " elements (dims ", whole_dims, ")");
  // An empty whole tensor still needs one record for its shape; any other
  // empty block adds nothing the other blocks do not cover.
  if (numel == 0 && !(whole == 0 && begin == 0)) return;
  BlockPlace place;
  place.whole_dims = &whole_dims;
  place.offset = begin;
  SerializeTensorChunks(block, name, acceptor, chunk_size, place);
}

std::string SerializeBlobToString(const Blob& blob, const std::string& name) {
  std::string result;
  int chunks = 0;
  SerializeBlob(
      blob, name,
      [&](const std::string&, const std::string& value) {
        result = value;
        ++chunks;
      },
      kNoChunking);
  DOPPIO_ENFORCE_EQ(chunks, 1, "blob '", name,
                    "' serializes to several chunks; use SerializeBlob with an acceptor");
  return result;
}

void DeserializeBlob(const BlobProto& proto, Blob* blob) {
  DOPPIO_ENFORCE(blob != nullptr, "DeserializeBlob needs a blob to fill");
  if (HoldsTensor(proto)) {
    DOPPIO_ENFORCE(proto.has_tensor(), "blob ", BlobLabel(proto),
                   " is of type Tensor but carries no tensor");
    DeserializeTensor(proto.tensor(), blob->GetMutableTensor());
    return;
  }
  DeserializerMaker make = FindDeserializer(proto.type());
  DOPPIO_ENFORCE(static_cast<bool>(make), "blob ", BlobLabel(proto), " has type '", proto.type(),
                 "', which no deserializer handles (known: ", KnownBlobTypes(), ")");
  make()->Deserialize(proto, blob);
}

void DeserializeBlob(const std::string& serialized, Blob* blob) {
  BlobProto proto;
  DOPPIO_ENFORCE(proto.ParseFromString(serialized), "cannot parse a BlobProto from ",
                 serialized.size(), " bytes (corrupt or not a serialized blob)");
  DeserializeBlob(proto, blob);
}

void DeserializeBlobChunks(const std::vector<BlobProto>& chunks, Blob* blob) {
  DOPPIO_ENFORCE(blob != nullptr, "DeserializeBlobChunks needs a blob to fill");
  DOPPIO_ENFORCE(!chunks.empty(), "DeserializeBlobChunks got no chunks");
  const bool tensor = HoldsTensor(chunks[0]);
  for (const BlobProto& chunk : chunks) {
    DOPPIO_ENFORCE(HoldsTensor(chunk) == tensor && chunk.type() == chunks[0].type(),
                   "blob ", BlobLabel(chunks[0]), " has chunks of different types: '",
                   chunks[0].type(), "' and '", chunk.type(), "'");
  }
  if (tensor) {
    DeserializeTensorChunks(chunks, blob);
  } else {
    DeserializeContentChunks(chunks, blob);
  }
}

std::string BlobNameFromChunkKey(const std::string& key) {
  return key.substr(0, key.find(kChunkIdSeparator));
}

}  // namespace doppio
