#include "operators/db_path.h"

#include <filesystem>
#include <system_error>

#include "core/enforce.h"

namespace doppio {
namespace {

namespace fs = std::filesystem;

// Normal form without a trailing separator, so that "/a/b/" and "/a/b" compare
// equal component by component.
fs::path Normal(const fs::path& path) {
  fs::path normal = path.lexically_normal();
  if (!normal.has_filename() && normal.has_relative_path()) normal = normal.parent_path();
  return normal;
}

// Whether `path` is `root` or below it (both absolute and normal).
bool IsInside(const fs::path& path, const fs::path& root) {
  const fs::path relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

}  // namespace

std::string ResolveDBPath(const std::string& op_type, const std::string& path,
                          bool absolute_path, const std::string& root_folder,
                          AbsolutePathPolicy absolute_policy) {
  DOPPIO_ENFORCE(!path.empty(), "", op_type, ": the db path is empty");
  if (absolute_path) return path;
  const fs::path given(path);
  if (given.is_absolute() && absolute_policy == AbsolutePathPolicy::kAsGiven) return path;

  const std::string root = root_folder.empty() ? std::string(".") : root_folder;
  // With the default root the path stays as the user wrote it (messages,
  // DBReader sources); Caffe2 would have made it "./" + path.
  const fs::path candidate = given.is_absolute() || root == "." ? given : fs::path(root) / given;
  const auto refuse = [&](const char* how, const fs::path& resolved, const fs::path& inside) {
    DOPPIO_THROW("", op_type, ": db path '", path, "' leaves the root folder '", root, "'", how,
                 " (it resolves to '", resolved.string(), "', outside '", inside.string(),
                 "'); relative db paths must stay inside the root folder. Pass "
                 "absolute_path=1 to use the path as given.");
  };

  std::error_code error;
  const fs::path root_absolute = Normal(fs::absolute(root, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve the root folder '", root,
                 "': ", error.message());
  const fs::path candidate_absolute = Normal(fs::absolute(candidate, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve db path '", path,
                 "': ", error.message());
  if (!IsInside(candidate_absolute, root_absolute)) {
    refuse("", candidate_absolute, root_absolute);
  }
  DOPPIO_ENFORCE(candidate_absolute != root_absolute, "", op_type, ": db path '", path,
                 "' names the root folder '", root, "' itself, not a db inside it");

  // The same question after following symbolic links, on the real file
  // system: a link inside the root may point anywhere.
  const fs::path root_real = fs::canonical(root_absolute, error);
  DOPPIO_ENFORCE(!error, "", op_type, ": the root folder '", root, "' (for db path '", path,
                 "') cannot be resolved: ", error.message());
  const fs::path candidate_real = Normal(fs::weakly_canonical(candidate_absolute, error));
  DOPPIO_ENFORCE(!error, "", op_type, ": cannot resolve db path '", path,
                 "' under the root folder '", root, "': ", error.message());
  if (!IsInside(candidate_real, root_real) || candidate_real == root_real) {
    refuse(" through a symbolic link", candidate_real, root_real);
  }
  return candidate.string();
}

}  // namespace doppio
