#include "core/enforce.h"

namespace doppio {

namespace {
// Source paths are long and only useful to us; keep the file name.
const char* BaseName(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}
}  // namespace

Error::Error(const char* file, int line, const std::string& condition,
             const std::string& message) {
  std::ostringstream ss;
  ss << message;
  if (!condition.empty()) {
    ss << (message.empty() ? "" : " ") << "(check failed: " << condition << ")";
  }
  ss << " [" << BaseName(file) << ":" << line << "]";
  message_ = ss.str();
}

void Error::AppendContext(const std::string& context) {
  message_ += "\n  ";
  message_ += context;
}

}  // namespace doppio
