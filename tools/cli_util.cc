#include "tools/cli_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include "core/enforce.h"
#include "core/limits.h"
#include "core/npy.h"
#include "core/serialization.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace cli {
namespace {

bool IsHelpFlag(const std::string& name) {
  return name == "help" || name == "h" || name == "helpfull" || name == "helpshort" ||
         name == "?";
}

// Text protos are printable ASCII or UTF-8; binary ones almost always hold
// small length varints, i.e. control bytes.
bool LooksLikeText(const std::string& bytes) {
  for (char c : bytes) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && u != '\n' && u != '\r' && u != '\t') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

class CollectingErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) first_ = MakeString("line ", line + 1, " column ", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// Empty string on success, else why the bytes are not that format. Text
// that happens to decode as wire data almost always yields fields the message
// does not have; `reject_unknown` treats that as a failure, so a mistyped
// text file reports its text error instead of running as nonsense.
std::string TryBinary(const std::string& bytes, google::protobuf::Message* message,
                      bool reject_unknown) {
  message->Clear();
  if (!message->ParsePartialFromString(bytes)) {
    return "malformed binary protobuf (truncated or corrupt wire data)";
  }
  if (reject_unknown &&
      !message->GetReflection()->GetUnknownFields(*message).empty()) {
    return "decodes only to fields " + message->GetTypeName() + " does not have";
  }
  if (!message->IsInitialized()) {
    return "binary protobuf lacks required fields: " + message->InitializationErrorString();
  }
  return "";
}

std::string TryText(const std::string& bytes, google::protobuf::Message* message) {
  message->Clear();
  CollectingErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(bytes, message)) return "";
  return errors.first().empty() ? "not valid text format" : errors.first();
}

}  // namespace

ParsedCommandLine ParseCommandLine(int argc, char** argv,
                                   const std::set<std::string>& repeatable) {
  ParsedCommandLine parsed;
  bool flags_ended = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flags_ended || arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    const size_t dashes = arg[1] == '-' ? 2 : 1;
    const size_t equals = arg.find('=');
    std::string name = arg.substr(dashes, equals == std::string::npos
                                              ? std::string::npos
                                              : equals - dashes);
    const bool has_value = equals != std::string::npos;
    std::string value = has_value ? arg.substr(equals + 1) : "";
    auto take_next_value = [&]() {
      if (i + 1 >= argc) throw UsageError("flag --" + name + " needs a value");
      value = argv[++i];
    };

    if (IsHelpFlag(name)) {
      parsed.help_requested = true;
      continue;
    }
    if (repeatable.count(name)) {
      if (!has_value) take_next_value();
      parsed.repeated[name].push_back(value);
      continue;
    }
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      // "--noverbose" clears the boolean flag "verbose".
      if (!has_value && name.rfind("no", 0) == 0 &&
          gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) &&
          info.type == "bool") {
        gflags::SetCommandLineOption(info.name.c_str(), "false");
        continue;
      }
      throw UsageError("unknown flag '" + arg + "'");
    }
    if (!has_value) {
      if (info.type == "bool") {
        value = "true";
      } else {
        take_next_value();
      }
    }
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      throw UsageError("invalid value '" + value + "' for --" + name + " (expects " +
                       info.type + ")");
    }
  }
  return parsed;
}

std::vector<std::pair<std::string, std::string>> ParseNameFileList(
    const std::string& flag, const std::vector<std::string>& values) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> seen;
  for (const std::string& value : values) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      const std::string item = value.substr(start, comma - start);
      start = comma + 1;
      if (item.empty()) continue;
      const size_t equals = item.find('=');
      if (equals == std::string::npos || equals == 0 || equals + 1 == item.size()) {
        throw UsageError("--" + flag + " expects NAME=FILE, got '" + item + "'");
      }
      const std::string name = item.substr(0, equals);
      if (!seen.insert(name).second) {
        throw UsageError("--" + flag + " names blob '" + name + "' twice");
      }
      pairs.emplace_back(name, item.substr(equals + 1));
    }
  }
  return pairs;
}

void InitLogging(const char* argv0) {
  google::protobuf::SetLogHandler(nullptr);
  // Set before the command line is parsed, so --minloglevel etc. still win.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_WARNING;
  google::InitGoogleLogging(argv0);
}

std::string ReadFileBytes(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  DOPPIO_ENFORCE(!error && std::filesystem::exists(status), "cannot open '", path,
                 "': no such file");
  DOPPIO_ENFORCE(std::filesystem::is_regular_file(status), "cannot read '", path,
                 "': not a regular file");
  std::ifstream file(path, std::ios::binary);
  DOPPIO_ENFORCE(file.is_open(), "cannot open '", path, "': ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  DOPPIO_ENFORCE(!file.bad(), "cannot read '", path, "': ", std::strerror(errno));
  DOPPIO_ENFORCE(!bytes.empty(), "'", path, "' is empty");
  return bytes;
}

void ReadProtoFile(const std::string& path, google::protobuf::Message* message) {
  // Checked before reading: the file's size bounds what parsing will build.
  const std::string what = message->GetDescriptor()->name() + " file '" + path + "'";
  std::error_code size_error;
  const auto size = std::filesystem::file_size(path, size_error);
  if (!size_error) EnforceProtoBytesLimit(static_cast<int64_t>(size), what);
  const std::string bytes = ReadFileBytes(path);
  EnforceProtoBytesLimit(static_cast<int64_t>(bytes.size()), what);
  const bool text_first = LooksLikeText(bytes);
  const std::string first_error =
      text_first ? TryText(bytes, message) : TryBinary(bytes, message, false);
  if (first_error.empty()) return;
  const std::string second_error =
      text_first ? TryBinary(bytes, message, true) : TryText(bytes, message);
  if (second_error.empty()) return;
  const std::string& binary_error = text_first ? second_error : first_error;
  const std::string& text_error = text_first ? first_error : second_error;
  DOPPIO_THROW("cannot parse '", path, "' as a ", message->GetTypeName(),
               ": as binary: ", binary_error, "; as text format: ", text_error);
}

Tensor ReadTensorFile(const std::string& path) {
  const std::string bytes = ReadFileBytes(path);
  if (LooksLikeNpy(bytes)) return ParseNpy(bytes, path);
  TensorProto proto;
  try {
    ReadProtoFile(path, &proto);
  } catch (Error& error) {
    error.AppendContext("(input files are .npy or TensorProto protobuf)");
    throw;
  }
  Tensor tensor;
  try {
    DeserializeTensor(proto, &tensor);
  } catch (Error& error) {
    error.AppendContext("while loading the TensorProto in '" + path + "'");
    throw;
  }
  return tensor;
}

std::string OneLine(const std::string& message) {
  std::string line;
  size_t i = 0;
  while (i < message.size()) {
    const char c = message[i];
    if (c == '\n' || c == '\r') {
      // A context line break and its indentation become one separator.
      while (i < message.size() &&
             (message[i] == '\n' || message[i] == '\r' || message[i] == ' ' ||
              message[i] == '\t')) {
        ++i;
      }
      if (!line.empty() && i < message.size()) line += "; ";
      continue;
    }
    line += c;
    ++i;
  }
  return line;
}

void ReportError(const char* tool, const std::string& message) {
  const std::string line = std::string(tool) + ": error: " + OneLine(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

int RunTool(const char* tool, const char* usage, const char* argv0,
            const std::function<int()>& body) {
  gflags::SetUsageMessage(usage);
  InitLogging(argv0);
  try {
    return body();
  } catch (const UsageError& error) {
    ReportError(tool, std::string(error.what()) + " (see --help)");
    return kExitUsage;
  } catch (const std::exception& error) {
    ReportError(tool, error.what());
    return kExitFailure;
  }
}

int RunFlagsOnlyTool(const char* tool, const char* usage, const char* flags_source, int argc,
                     char** argv, const std::function<int()>& body) {
  return RunTool(tool, usage, argv[0], [&] {
    const ParsedCommandLine parsed = ParseCommandLine(argc, argv, {});
    if (parsed.help_requested) {
      gflags::ShowUsageWithFlagsRestrict(argv[0], flags_source);
      return 0;
    }
    if (!parsed.positional.empty()) {
      throw UsageError("unexpected argument '" + parsed.positional.front() + "'");
    }
    return body();
  });
}

}  // namespace cli
}  // namespace doppio
