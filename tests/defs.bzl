"""One gtest binary per *_test.cc file in a test folder."""

def cc_tests_per_file(deps = [], data = [], size = "small", exclude = []):
    """Every test links //core and //tests:test_util and can read the
    Caffe2 wire vectors (test_util's VectorPath); `deps` and `data` add to that.
    `exclude`: test files that the BUILD file declares itself (other deps)."""
    for src in native.glob(["*_test.cc"], exclude = exclude):
        native.cc_test(
            name = src[:-len(".cc")],
            srcs = [src],
            deps = deps + [
                "//core",
                # The collectives register ops like //operators does; linked
                # into every test so registry-wide checks see them.
                "//parallel:collectives_cpu",
                "//parallel/gloo:gloo_ops",
                "//parallel/nccl:nccl_ops_schema",
                "//tests:test_util",
                "//third_party/system:gtest_main",
            ],
            data = data + ["//tests:caffe2_wire"],
            size = size,
        )

def py_tests_per_file(deps = [], data = [], size = "small"):
    """One py_test per *_test.py file, run by Debian's python3 with the
    doppio package importable. A Python test whose stem is also a C++ test's
    gets the suffix _py."""
    cc_stems = [src[:-len(".cc")] for src in native.glob(["*_test.cc"])]
    for src in native.glob(["*_test.py"]):
        stem = src[:-len(".py")]
        native.py_test(
            name = stem + "_py" if stem in cc_stems else stem,
            srcs = [src],
            main = src,
            python_version = "PY3",
            deps = deps + ["//python_api:doppio"],
            data = data,
            size = size,
        )
