"""One gtest binary per *_test.cc file in a test folder."""

def cc_tests_per_file(deps = [], data = [], size = "small"):
    for src in native.glob(["*_test.cc"]):
        native.cc_test(
            name = src[:-len(".cc")],
            srcs = [src],
            deps = deps + ["//third_party/system:gtest_main"],
            data = data,
            size = size,
        )
