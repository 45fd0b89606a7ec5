#include "core/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/limits.h"

namespace doppio {
namespace {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy code assumes a little-endian host"
#endif
static_assert(sizeof(bool) == 1, ".npy stores bool as one byte");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Magic, two version bytes, and a 2-byte (v1) or 4-byte (v2, v3) length.
constexpr size_t kMaxPreambleSize = kMagicSize + 2 + 4;
// numpy writes headers of a few hundred bytes; anything far larger than any
// plain dtype needs is hostile, and must not make us allocate.
constexpr size_t kMaxHeaderSize = 1 << 20;
// numpy's own limit (NPY_MAXDIMS) is 32 in 1.x and 64 in 2.x.
constexpr size_t kMaxDims = 64;
// Nested tuples in a header only appear in structured dtypes; a depth limit
// keeps a hostile "((((((" from exhausting the stack.
constexpr int kMaxNesting = 8;
// numpy aligns the data to 64 bytes.
constexpr size_t kHeaderAlignment = 64;

// The (sub)set of Python literals a .npy header dict uses.
struct PyValue {
  enum class Kind { kString, kInt, kBool, kNone, kTuple, kList, kDict };
  Kind kind = Kind::kNone;
  std::string text;
  int64_t integer = 0;
  bool boolean = false;
  std::vector<PyValue> items;
  std::vector<std::pair<std::string, PyValue>> entries;
};

const char* KindName(PyValue::Kind kind) {
  switch (kind) {
    case PyValue::Kind::kString: return "a string";
    case PyValue::Kind::kInt: return "an int";
    case PyValue::Kind::kBool: return "a bool";
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kTuple: return "a tuple";
    case PyValue::Kind::kList: return "a list";
    case PyValue::Kind::kDict: return "a dict";
  }
  return "a value";
}

// Recursive descent over the header text; every error names the source and
// the offset within the header.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& source)
      : text_(text), source_(source) {}

  PyValue ParseWholeDict() {
    SkipSpace();
    if (Peek() != '{') Fail("expected the header to start with '{'");
    PyValue dict = ParseValue(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected text after the header dict");
    return dict;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    DOPPIO_THROW("'", source_, "': malformed .npy header (", what, " at offset ", pos_,
                 " of header \"", Printable(), "\")");
  }

  std::string Printable() const {
    std::string shown;
    for (char c : text_.substr(0, 200)) {
      const unsigned char u = static_cast<unsigned char>(c);
      shown += (u >= 32 && u < 127) ? c : '?';
    }
    if (text_.size() > 200) shown += "...";
    return shown;
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void Expect(char c) {
    SkipSpace();
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  bool StartsWithWord(const char* word) const {
    const size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    const char next = pos_ + n < text_.size() ? text_[pos_ + n] : '\0';
    return !(std::isalnum(static_cast<unsigned char>(next)) || next == '_');
  }

  PyValue ParseValue(int depth) {
    if (depth > kMaxNesting) Fail("values nested too deeply");
    SkipSpace();
    const char c = Peek();
    if (c == '\'' || c == '"') return ParseString();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return ParseInt();
    if (c == '(') return ParseSequence(')', PyValue::Kind::kTuple, depth);
    if (c == '[') return ParseSequence(']', PyValue::Kind::kList, depth);
    if (c == '{') return ParseDict(depth);
    PyValue value;
    if (StartsWithWord("True") || StartsWithWord("False")) {
      value.kind = PyValue::Kind::kBool;
      value.boolean = text_[pos_] == 'T';
      pos_ += value.boolean ? 4 : 5;
      return value;
    }
    if (StartsWithWord("None")) {
      pos_ += 4;
      return value;
    }
    Fail("expected a Python literal");
  }

  PyValue ParseString() {
    const char quote = text_[pos_++];
    PyValue value;
    value.kind = PyValue::Kind::kString;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') {
        Fail("unsupported character in a string");
      }
      value.text += text_[pos_++];
    }
    if (pos_ >= text_.size()) Fail("unterminated string");
    ++pos_;
    return value;
  }

  PyValue ParseInt() {
    PyValue value;
    value.kind = PyValue::Kind::kInt;
    const bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) Fail("expected digits");
    uint64_t magnitude = 0;
    const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    while (std::isdigit(static_cast<unsigned char>(Peek()))) {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_++] - '0');
      if (magnitude > (limit - digit) / 10) Fail("integer too large");
      magnitude = magnitude * 10 + digit;
    }
    // Python 2's numpy wrote long integers as "3L".
    if (Peek() == 'L' || Peek() == 'l') ++pos_;
    value.integer = negative ? -static_cast<int64_t>(magnitude)
                             : static_cast<int64_t>(magnitude);
    return value;
  }

  PyValue ParseSequence(char close, PyValue::Kind kind, int depth) {
    ++pos_;
    PyValue value;
    value.kind = kind;
    SkipSpace();
    while (Peek() != close) {
      value.items.push_back(ParseValue(depth + 1));
      if (value.items.size() > kMaxDims * 4) Fail("sequence too long");
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (Peek() != close) {
        Fail(std::string("expected ',' or '") + close + "'");
      }
    }
    ++pos_;
    return value;
  }

  PyValue ParseDict(int depth) {
    ++pos_;
    PyValue value;
    value.kind = PyValue::Kind::kDict;
    SkipSpace();
    while (Peek() != '}') {
      if (Peek() != '\'' && Peek() != '"') Fail("expected a string key");
      std::string key = ParseString().text;
      for (const auto& entry : value.entries) {
        if (entry.first == key) Fail("duplicate key '" + key + "'");
      }
      Expect(':');
      value.entries.emplace_back(std::move(key), ParseValue(depth + 1));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (Peek() != '}') {
        Fail("expected ',' or '}'");
      }
    }
    ++pos_;
    return value;
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
};

struct DescrType {
  const char* code;  // kind and size, without the byte-order character
  DataType dtype;
};
constexpr DescrType kDescrTypes[] = {
    {"f2", DataType::kFloat16}, {"f4", DataType::kFloat},  {"f8", DataType::kDouble},
    {"i1", DataType::kInt8},    {"i2", DataType::kInt16},  {"i4", DataType::kInt32},
    {"i8", DataType::kInt64},   {"u1", DataType::kUint8},  {"u2", DataType::kUint16},
    {"u4", DataType::kUint32},  {"u8", DataType::kUint64}, {"b1", DataType::kBool},
};

std::string SupportedDescrs() {
  std::string list;
  for (const DescrType& type : kDescrTypes) {
    if (!list.empty()) list += ", ";
    list += type.code;
  }
  return list;
}

struct NpyHeader {
  DataType dtype = DataType::kUndefined;
  bool swap_bytes = false;
  std::vector<int64_t> dims;
  size_t data_bytes = 0;
};

// Where the header text lies, from the fixed-size preamble.
struct Preamble {
  size_t header_offset = 0;
  size_t header_size = 0;
};

Preamble ParsePreamble(const std::string& prefix, size_t total_size,
                       const std::string& source) {
  DOPPIO_ENFORCE(prefix.size() >= kMagicSize &&
                     std::memcmp(prefix.data(), kMagic, kMagicSize) == 0,
                 "'", source, "': not a .npy file (it does not start with \"\\x93NUMPY\")");
  DOPPIO_ENFORCE(prefix.size() >= kMagicSize + 2, "'", source,
                 "': truncated .npy file (", total_size, " bytes, no version)");
  const int major = static_cast<unsigned char>(prefix[kMagicSize]);
  const int minor = static_cast<unsigned char>(prefix[kMagicSize + 1]);
  DOPPIO_ENFORCE((major == 1 || major == 2 || major == 3) && minor == 0, "'", source,
                 "': unsupported .npy format version ", major, ".", minor,
                 " (supported: 1.0, 2.0, 3.0)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  Preamble preamble;
  preamble.header_offset = kMagicSize + 2 + length_bytes;
  DOPPIO_ENFORCE(prefix.size() >= preamble.header_offset, "'", source,
                 "': truncated .npy file (", total_size, " bytes, no header length)");
  for (size_t i = 0; i < length_bytes; ++i) {
    const size_t byte = static_cast<unsigned char>(prefix[kMagicSize + 2 + i]);
    preamble.header_size |= byte << (8 * i);
  }
  DOPPIO_ENFORCE(preamble.header_size <= kMaxHeaderSize, "'", source, "': .npy header length ",
                 preamble.header_size, " is implausibly large (limit ",
                 kMaxHeaderSize, ")");
  DOPPIO_ENFORCE(preamble.header_offset + preamble.header_size <= total_size, "'", source,
                 "': truncated .npy file: header length ", preamble.header_size,
                 " runs past the end of the file (", total_size, " bytes)");
  return preamble;
}

const PyValue& Lookup(const PyValue& dict, const char* key, const std::string& source) {
  for (const auto& entry : dict.entries) {
    if (entry.first == key) return entry.second;
  }
  DOPPIO_THROW("'", source, "': .npy header lacks the '", key, "' key");
}

void ParseDescr(const PyValue& descr, const std::string& source, NpyHeader* header) {
  DOPPIO_ENFORCE(descr.kind == PyValue::Kind::kString, "'", source,
                 "': unsupported .npy dtype: 'descr' is ", KindName(descr.kind),
                 " (structured dtypes are not supported; supported: ",
                 SupportedDescrs(), ")");
  std::string code = descr.text;
  char order = '=';
  if (!code.empty() && std::strchr("<>|=", code[0]) != nullptr) {
    order = code[0];
    code = code.substr(1);
  }
  for (const DescrType& type : kDescrTypes) {
    if (code == type.code) {
      header->dtype = type.dtype;
      header->swap_bytes = order == '>' && ItemSize(type.dtype) > 1;
      return;
    }
  }
  DOPPIO_THROW("'", source, "': unsupported .npy dtype '", descr.text,
               "' (supported, in either byte order: ", SupportedDescrs(), ")");
}

std::vector<int64_t> ParseShape(const PyValue& shape, const std::string& source) {
  DOPPIO_ENFORCE(shape.kind == PyValue::Kind::kTuple, "'", source,
                 "': .npy header 'shape' is ", KindName(shape.kind), ", not a tuple");
  DOPPIO_ENFORCE(shape.items.size() <= kMaxDims, "'", source, "': .npy shape has ",
                 shape.items.size(), " dims (limit ", kMaxDims, ")");
  std::vector<int64_t> dims;
  for (const PyValue& item : shape.items) {
    DOPPIO_ENFORCE(item.kind == PyValue::Kind::kInt, "'", source,
                   "': .npy header 'shape' holds ", KindName(item.kind),
                   ", not only ints");
    DOPPIO_ENFORCE(item.integer >= 0, "'", source, "': .npy shape has a negative dimension ",
                   item.integer);
    dims.push_back(item.integer);
  }
  return dims;
}

// A Fortran-ordered array has C layout when at most one dim exceeds 1.
bool LayoutIsOrderFree(const std::vector<int64_t>& dims) {
  return std::count_if(dims.begin(), dims.end(), [](int64_t d) { return d > 1; }) <= 1;
}

NpyHeader ParseHeader(const std::string& text, const std::string& source) {
  const PyValue dict = HeaderParser(text, source).ParseWholeDict();
  for (const auto& entry : dict.entries) {
    DOPPIO_ENFORCE(entry.first == "descr" || entry.first == "fortran_order" ||
                       entry.first == "shape",
                   "'", source, "': .npy header has an unexpected key '", entry.first, "'");
  }
  NpyHeader header;
  ParseDescr(Lookup(dict, "descr", source), source, &header);
  const PyValue& fortran = Lookup(dict, "fortran_order", source);
  DOPPIO_ENFORCE(fortran.kind == PyValue::Kind::kBool, "'", source,
                 "': .npy header 'fortran_order' is ", KindName(fortran.kind),
                 ", not a bool");
  try {
    header.dims = ParseShape(Lookup(dict, "shape", source), source);
    const int64_t numel = CheckedNumElements(header.dims);
    const size_t item = ItemSize(header.dtype);
    DOPPIO_ENFORCE(static_cast<uint64_t>(numel) <= std::numeric_limits<size_t>::max() / item,
                   "shape ", header.dims, " is too large");
    header.data_bytes = static_cast<size_t>(numel) * item;
    EnforceTensorBytesLimit(numel, header.dtype,
                            MakeString("the ", DataTypeName(header.dtype), header.dims, " array"));
  } catch (Error& error) {
    error.AppendContext("in the .npy header of '" + source + "'");
    throw;
  }
  DOPPIO_ENFORCE(!fortran.boolean || LayoutIsOrderFree(header.dims), "'", source,
                 "': Fortran-ordered .npy arrays (shape ", header.dims,
                 ") are not supported; save np.ascontiguousarray(x) instead");
  return header;
}

void CheckDataSize(const NpyHeader& header, size_t available, const std::string& source) {
  if (available < header.data_bytes) {
    DOPPIO_THROW("'", source, "': truncated .npy file: the header promises ",
                 header.data_bytes, " bytes of ", DataTypeName(header.dtype),
                 header.dims, " data but only ", available, " follow it");
  }
  DOPPIO_ENFORCE(available == header.data_bytes, "'", source, "': .npy file has ",
                 available - header.data_bytes, " unexpected bytes after its ",
                 header.data_bytes, " bytes of ", DataTypeName(header.dtype),
                 header.dims, " data");
}

// In-place fix-ups of freshly read data: byte order, and bools that are not
// 0 or 1 (any other byte in a C++ bool is undefined behaviour).
void NormalizeData(const NpyHeader& header, Tensor* tensor) {
  auto* bytes = static_cast<unsigned char*>(tensor->raw_mutable_data());
  const size_t item = tensor->itemsize();
  if (header.swap_bytes) {
    for (size_t offset = 0; offset < header.data_bytes; offset += item) {
      std::reverse(bytes + offset, bytes + offset + item);
    }
  }
  if (header.dtype == DataType::kBool) {
    for (size_t i = 0; i < header.data_bytes; ++i) bytes[i] = bytes[i] != 0;
  }
}

std::string DescrOf(DataType dtype) {
  for (const DescrType& type : kDescrTypes) {
    if (type.dtype == dtype) {
      return std::string(ItemSize(dtype) == 1 ? "|" : "<") + type.code;
    }
  }
  DOPPIO_THROW("tensors of type ", DataTypeName(dtype),
               " cannot be stored in a .npy file (supported: ", SupportedDescrs(), ")");
}

std::string ShapeTuple(const std::vector<int64_t>& dims) {
  std::string tuple = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) tuple += ", ";
    tuple += std::to_string(dims[i]);
  }
  if (dims.size() == 1) tuple += ",";
  return tuple + ")";
}

// Preamble plus the padded header: everything before the data.
std::string EncodeHeader(const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCPU,
                 "only CPU tensors can be written to .npy; copy it to the CPU first");
  std::string dict = "{'descr': '" + DescrOf(tensor.dtype()) +
                     "', 'fortran_order': False, 'shape': " + ShapeTuple(tensor.dims()) +
                     ", }";
  for (int major = 1; major <= 2; ++major) {
    const size_t length_bytes = major == 1 ? 2 : 4;
    const size_t preamble = kMagicSize + 2 + length_bytes;
    const size_t unpadded = preamble + dict.size() + 1;  // +1: the final '\n'
    const size_t total = (unpadded + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
    const size_t header_size = total - preamble;
    if (major == 1 && header_size > std::numeric_limits<uint16_t>::max()) continue;
    std::string out(kMagic, kMagicSize);
    out += static_cast<char>(major);
    out += '\0';
    for (size_t i = 0; i < length_bytes; ++i) {
      out += static_cast<char>((header_size >> (8 * i)) & 0xff);
    }
    out += dict;
    out.append(total - out.size() - 1, ' ');
    out += '\n';
    return out;
  }
  DOPPIO_THROW("unreachable: .npy header does not fit format 2.0");
}

const char* DataBytes(const Tensor& tensor) {
  if (tensor.numel() == 0) return nullptr;
  return static_cast<const char*>(tensor.raw_data());
}

}  // namespace

bool LooksLikeNpy(const std::string& bytes) {
  return bytes.size() >= kMagicSize && std::memcmp(bytes.data(), kMagic, kMagicSize) == 0;
}

Tensor ParseNpy(const std::string& bytes, const std::string& source) {
  const Preamble preamble =
      ParsePreamble(bytes.substr(0, kMaxPreambleSize), bytes.size(), source);
  const NpyHeader header =
      ParseHeader(bytes.substr(preamble.header_offset, preamble.header_size), source);
  const size_t data_offset = preamble.header_offset + preamble.header_size;
  CheckDataSize(header, bytes.size() - data_offset, source);
  Tensor tensor(header.dims, header.dtype);
  void* data = tensor.raw_mutable_data(header.dtype);
  if (header.data_bytes > 0) std::memcpy(data, bytes.data() + data_offset, header.data_bytes);
  NormalizeData(header, &tensor);
  return tensor;
}

Tensor ReadNpyFile(const std::string& path) {
  const std::string& source = path;
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  DOPPIO_ENFORCE(!error && std::filesystem::exists(status), "cannot open '", source,
                 "': no such file");
  DOPPIO_ENFORCE(std::filesystem::is_regular_file(status), "cannot read '", source,
                 "': not a regular file");
  std::ifstream file(path, std::ios::binary);
  DOPPIO_ENFORCE(file.is_open(), "cannot open '", source, "': ", std::strerror(errno));
  const size_t total_size = std::filesystem::file_size(path, error);
  DOPPIO_ENFORCE(!error, "cannot get the size of '", source, "': ", error.message());

  std::string prefix(std::min(total_size, kMaxPreambleSize), '\0');
  file.read(&prefix[0], static_cast<std::streamsize>(prefix.size()));
  const Preamble preamble = ParsePreamble(prefix, total_size, source);
  // ParsePreamble bounded header_size by the file's size and kMaxHeaderSize.
  std::string text(preamble.header_size, '\0');
  file.seekg(static_cast<std::streamoff>(preamble.header_offset));
  file.read(&text[0], static_cast<std::streamsize>(text.size()));
  DOPPIO_ENFORCE(file.good(), "cannot read the .npy header of '", source, "'");
  const NpyHeader header = ParseHeader(text, source);
  const size_t data_offset = preamble.header_offset + preamble.header_size;
  CheckDataSize(header, total_size - data_offset, source);

  Tensor tensor(header.dims, header.dtype);
  void* data = tensor.raw_mutable_data(header.dtype);
  if (header.data_bytes > 0) {
    file.read(static_cast<char*>(data), static_cast<std::streamsize>(header.data_bytes));
    DOPPIO_ENFORCE(file.gcount() == static_cast<std::streamsize>(header.data_bytes),
                   "cannot read the data of '", source, "' (the file changed while ",
                   "being read?)");
  }
  NormalizeData(header, &tensor);
  return tensor;
}

std::string EncodeNpy(const Tensor& tensor) {
  std::string out = EncodeHeader(tensor);
  if (tensor.numel() > 0) out.append(DataBytes(tensor), tensor.nbytes());
  return out;
}

void WriteNpyFile(const Tensor& tensor, const std::string& path) {
  std::string header;
  const char* data = nullptr;
  try {
    header = EncodeHeader(tensor);
    data = DataBytes(tensor);
  } catch (Error& error) {
    error.AppendContext("while writing '" + path + "'");
    throw;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  DOPPIO_ENFORCE(file.is_open(), "cannot open '", path, "' for writing: ",
                 std::strerror(errno));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (data != nullptr) file.write(data, static_cast<std::streamsize>(tensor.nbytes()));
  file.close();
  DOPPIO_ENFORCE(!file.fail(), "cannot write '", path, "': ", std::strerror(errno));
}

}  // namespace doppio
