"""cuda_library: .cu files compiled by nvcc into a static library.

Bazel has no CUDA rules offline, so a genrule runs /usr/local/cuda/bin/nvcc
on each .cu file and archives the objects; a cc_library wraps the archive so
C++ targets depend on it like on any other library. Device code is built for
Hopper (sm_90) with its PTX embedded, so newer GPUs JIT it.
"""

NVCC = "/usr/local/cuda/bin/nvcc"

NVCC_FLAGS = [
    "-std=c++17",
    "-O2",
    "-Xcompiler",
    "-fPIC",
    "--generate-code",
    "arch=compute_90,code=[sm_90,compute_90]",
    # The host compiler Bazel uses; nvcc's default would be the first g++ on
    # PATH.
    "-ccbin",
    "/usr/bin/g++",
    # The repository root and generated files (proto headers), as for
    # cc_library sources. Debian's protobuf and glog headers sit in
    # /usr/include, which g++ searches by itself.
    "-I.",
    "-I$(GENDIR)",
]

def cuda_library(name, srcs, hdrs = [], deps = [], nvcc_hdrs = [], copts = [], visibility = None):
    """A cc_library `name` holding the nvcc-compiled `srcs` (.cu files).

    hdrs: headers of this library (declared to C++ users and visible to nvcc).
    deps: cc deps of the C++ users of this library (cudart is always added).
    nvcc_hdrs: other headers the .cu files include (labels or files); nvcc runs
        in a sandbox and sees only declared inputs.
    copts: extra nvcc flags.
    """
    if not srcs:
        # No kernels yet (a glob that matches nothing): a plain library.
        native.cc_library(
            name = name,
            hdrs = hdrs,
            deps = deps + ["//third_party/cuda:cudart"],
            visibility = visibility,
        )
        return
    archive = "lib%s_cu.a" % name
    object_dir = "$(@D)/_%s_cu_objs" % name
    commands = ["set -e", "mkdir -p " + object_dir]
    objects = []
    for src in srcs:
        if not src.endswith(".cu"):
            fail("cuda_library %s: %s is not a .cu file" % (name, src))
        obj = "%s/%s.o" % (object_dir, src[:-len(".cu")].replace("/", "_"))
        objects.append(obj)
        commands.append(" ".join(
            [NVCC] + NVCC_FLAGS + copts + ["-c", "$(location %s)" % src, "-o", obj],
        ))
    commands.append("rm -f $@")
    commands.append("ar rcs $@ " + " ".join(objects))

    native.genrule(
        name = name + "_nvcc",
        srcs = srcs + hdrs + nvcc_hdrs,
        outs = [archive],
        cmd = " && ".join(commands),
        message = "nvcc " + name,
        visibility = ["//visibility:private"],
    )

    native.cc_library(
        name = name,
        srcs = [archive],
        hdrs = hdrs,
        deps = deps + ["//third_party/cuda:cudart"],
        visibility = visibility,
    )
