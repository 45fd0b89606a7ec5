"""One gtest binary per *_test.cc file in a test folder."""

def cc_tests_per_file(deps = [], data = [], size = "small"):
    """Every test links //core and //tests:test_util and can read the shared
    Caffe2 vectors (test_util's VectorPath); `deps` and `data` add to that."""
    for src in native.glob(["*_test.cc"]):
        native.cc_test(
            name = src[:-len(".cc")],
            srcs = [src],
            deps = deps + [
                "//core",
                "//tests:test_util",
                "//third_party/system:gtest_main",
            ],
            data = data + ["@shared_testdata//:caffe2_wire"],
            size = size,
        )
