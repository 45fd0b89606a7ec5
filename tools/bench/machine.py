#!/usr/bin/python3
"""What machine a benchmark ran on, for every result it prints or writes.

Machines differ from one run to the next (AVX2 on one, AVX-512 on another),
so absolute times only compare within one run; the ISA printed beside each
result says which kernels the CPU could run. Run as a script it prints the
one-line description the shell benches put in their headers.
"""
import os
import platform

# Widest first: the first one the CPU has names its vector ISA.
_ISA_LEVELS = [
    ("AVX-512+AMX", ("avx512f", "amx_tile")),
    ("AVX-512", ("avx512f",)),
    ("AVX2+FMA", ("avx2", "fma")),
    ("AVX", ("avx",)),
    ("SSE4.2", ("sse4_2",)),
]
# Flags worth listing beside the level: what oneDNN and OpenBLAS dispatch on.
_NOTABLE = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
            "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "f16c")


def _cpuinfo_field(name):
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def isa():
    """(level, notable flags): e.g. ('AVX-512', ['avx2', 'avx512f', ...])."""
    flags = set(_cpuinfo_field("flags").split())
    level = next((name for name, needs in _ISA_LEVELS if all(f in flags for f in needs)),
                 platform.machine())
    return level, [f for f in _NOTABLE if f in flags]


def machine():
    """The machine as a dict for a bench's JSON: cpu, cores, isa, flags,
    load average."""
    level, flags = isa()
    return dict(cpu=_cpuinfo_field("model name") or platform.processor(),
                cores=os.cpu_count(), isa=level, isa_flags=flags,
                load_average=list(os.getloadavg()))


def describe():
    """'<cpu>, <n> core(s), ISA <level> (<flags>)'."""
    info = machine()
    return "%s, %d core(s), ISA %s (%s)" % (info["cpu"] or "unknown CPU", info["cores"],
                                           info["isa"], " ".join(info["isa_flags"]) or "-")


if __name__ == "__main__":
    print(describe())
