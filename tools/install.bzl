"""The headers tools/install.sh copies into PREFIX/include/doppio."""

def _public_headers_impl(ctx):
    headers = []
    for dep in ctx.attr.deps:
        context = dep[CcInfo].compilation_context
        for header in context.headers.to_list():
            # Only this repository's headers: the CUDA toolkit's and the system
            # libraries' come from their own packages.
            if header.owner.workspace_name != "":
                continue
            path = header.short_path
            if any([path.startswith(prefix) for prefix in ctx.attr.exclude_prefixes]):
                continue
            if any([path.endswith(suffix) for suffix in ctx.attr.exclude_suffixes]):
                continue
            headers.append(header)
    headers = depset(headers).to_list()

    # install.sh finds each header by this path under bazel-bin (generated)
    # or the source tree, or under a runfiles tree, which holds both.
    manifest = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(manifest, "".join([h.short_path + "\n" for h in headers]))
    files = depset([manifest] + headers)
    return [DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = files))]

public_headers = rule(
    implementation = _public_headers_impl,
    doc = "The headers (sources and generated) of `deps` and what they include, " +
          "each at its path in the repository, less the excluded ones, and " +
          "NAME.txt listing those paths.",
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "exclude_prefixes": attr.string_list(),
        "exclude_suffixes": attr.string_list(),
    },
)
