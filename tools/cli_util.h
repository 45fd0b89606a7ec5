// Shared plumbing of Doppio's command-line tools: flag parsing that never lets
// gflags exit the process, file loading with errors that name the file, and
// the one-line error report every tool prints before exiting non-zero.
//
// Exit codes shared by the tools: 0 success, 1 a failure while working
// (bad file, bad net, failing op), 2 a usage error (unknown flag, bad value).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/message.h>

#include "core/tensor.h"

namespace doppio {
namespace cli {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// A mistake in the command line itself (reported with exit code 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedCommandLine {
  bool help_requested = false;
  // Every value of each repeatable flag, in command-line order.
  std::map<std::string, std::vector<std::string>> repeated;
  std::vector<std::string> positional;
};

// Sets gflags-defined flags from argv ("--name=value", "--name value",
// "--boolflag", "--noboolflag"; one or two dashes; "--" ends the flags).
// Flags named in `repeatable` may appear many times and are collected rather
// than set. Unknown flags and invalid values throw UsageError instead of
// letting gflags print and exit. --help / -h only set help_requested.
ParsedCommandLine ParseCommandLine(int argc, char** argv,
                                   const std::set<std::string>& repeatable);

// "a=x.npy,b=y.pb" (possibly over several flag occurrences) -> ordered
// (name, file) pairs; malformed items and repeated names throw UsageError.
std::vector<std::pair<std::string, std::string>> ParseNameFileList(
    const std::string& flag, const std::vector<std::string>& values);

// Quiets protobuf's own logging (parse failures are reported through our
// errors) and sets glog to log warnings and worse to stderr only.
void InitLogging(const char* argv0);

// The whole file; errors name it. Empty files are an error.
std::string ReadFileBytes(const std::string& path);

// Parses `path` into `message`, accepting binary or text protobuf: the
// likelier format (by content) is tried first, then the other; if neither
// parses, the error names the file and both failures.
void ReadProtoFile(const std::string& path, google::protobuf::Message* message);

// A tensor from a .npy file or a TensorProto file (binary or text),
// recognized by content.
Tensor ReadTensorFile(const std::string& path);

// An error message on one line: context lines joined with "; ".
std::string OneLine(const std::string& message);

// Prints "<tool>: error: <message>" as one line to stderr.
void ReportError(const char* tool, const std::string& message);

// What every tool's main() does around its work: sets the --help text and
// logging, then runs `body` and returns its exit status; anything it throws
// becomes one reported line and kExitUsage (a UsageError) or kExitFailure.
int RunTool(const char* tool, const char* usage, const char* argv0,
            const std::function<int()>& body);

// RunTool for a tool that takes flags only: parses the command line, answers
// --help with the flags defined in `flags_source` (e.g. "tools/run_net"),
// refuses positional arguments, then runs `body`.
int RunFlagsOnlyTool(const char* tool, const char* usage, const char* flags_source, int argc,
                     char** argv, const std::function<int()>& body);

}  // namespace cli
}  // namespace doppio
