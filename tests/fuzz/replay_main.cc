// The main() of a fuzz target outside a libFuzzer build: feeds every file
// under the directories (or the files) named on the command line to
// LLVMFuzzerTestOneInput once, in name order, so that `bazel test` replays
// the committed corpus, crash reproducers included. Arguments starting with
// '-' (libFuzzer flags) are ignored.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> InputsUnder(const fs::path& root) {
  std::vector<fs::path> inputs;
  if (fs::is_directory(root)) {
    // Runfiles trees are symlink farms: follow the links.
    for (const auto& entry : fs::recursive_directory_iterator(
             root, fs::directory_options::follow_directory_symlink)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
  } else if (fs::is_regular_file(root)) {
    inputs.push_back(root);
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;
    const std::vector<fs::path> inputs = InputsUnder(arg);
    if (inputs.empty()) {
      std::fprintf(stderr, "no fuzz inputs found at %s\n", arg.c_str());
      return 1;
    }
    for (const fs::path& input : inputs) {
      std::ifstream file(input, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
      if (!file.good() && !file.eof()) {
        std::fprintf(stderr, "cannot read %s\n", input.c_str());
        return 1;
      }
      // Named before running, so a crash's log says which input it was.
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", input.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 1;
  }
  std::fprintf(stderr, "replayed %zu inputs without a crash\n", replayed);
  return 0;
}
