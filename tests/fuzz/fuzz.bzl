"""Fuzz targets that are also regression tests.

In the normal (gcc) build each target is a cc_test linked with replay_main,
which runs every input of the target's committed corpus (corpus/NAME/) once:
past crashes stay fixed. Under `--config=fuzz` (clang, libFuzzer, ASan and
UBSan; see .bazelrc and tools/fuzz.sh) the same sources link with libFuzzer's
main instead, and the test replays the corpus under the sanitizers
(-runs=0) rather than fuzzing forever.
"""

def doppio_fuzz_target(name, srcs, deps = [], size = "small"):
    corpus = "tests/fuzz/corpus/" + name
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + [":fuzz_util"] + select({
            ":libfuzzer": [],
            "//conditions:default": [":replay_main"],
        }),
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        args = select({
            ":libfuzzer": ["-runs=0", corpus],
            "//conditions:default": [corpus],
        }),
        data = native.glob(["corpus/" + name + "/**"]),
        size = size,
        tags = ["fuzz_target"],
    )
