"""The README's quick start prints what the README says it prints (and the line reads
correctly), on any x86-64 machine.

CTranslate2 picks its kernels by the CPU's instruction set, so the same model can write a word
differently on another machine ("converged" for "converted"). The README promises the line up to
one word, and the same text every time on one machine; that is what is checked here, natively and
under an emulated older CPU; and that such a CPU computes in float32, where int8 loses words."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench.wer import score
from conftest import FRUGAL_RECOGNIZER, ROOT, needs_long

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"

# What a machine without AVX-512 looks like to CTranslate2 and to oneDNN, which it uses for the
# int8 matrix products: the first alone changes nothing where oneDNN picks its own kernels.
OLDER_CPUS = {
    "AVX2": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "AVX": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX", "ONEDNN_MAX_CPU_ISA": "AVX"},
    "GENERIC": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "GENERIC", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def older_than_this_cpu() -> str:
    """The newest kernel family below this machine's best (AVX2 under AVX-512, AVX under AVX2),
    so that the emulated CPU is never this one's own kernels."""
    from audio.whisper import cpu_flags

    flags = cpu_flags() or frozenset()
    return "AVX2" if "avx512f" in flags else "AVX" if "avx2" in flags else "GENERIC"


def readme_line() -> str:
    """The line the README shows under its quick start."""
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"the first command prints[^\n]*\n\n    (.+)\n", readme)
    assert shown, "the README no longer shows the quick start's output"
    return shown.group(1)


def quick_start(env: dict, **settings: str) -> str:
    """The quick start's first command as a newcomer runs it (not with the suite's frugal
    recognizer), with `settings` (TRANSCRIBER_* variables) on top; what it prints on stdout."""
    env = {**{k: v for k, v in env.items() if k not in FRUGAL_RECOGNIZER}, **settings}
    done = subprocess.run([sys.executable, "-m", "transcriber.cli", "transcribe", str(SAMPLE)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def words_apart(expected: str, printed: str) -> int:
    """How many words differ, case and punctuation aside (substitutions, deletions, insertions)."""
    errors = score(expected, printed)
    return errors.substitutions + errors.deletions + errors.insertions


def test_the_quick_start_prints_the_text_the_readme_shows(env):
    """P6-S1: `transcriber transcribe` on the bundled sample,
    with the default engine, prints the README's line up to one word, and the same text again
    on a second run on this machine."""
    expected = readme_line()
    first = quick_start(env)
    assert words_apart(expected, first) <= 1, first
    assert quick_start(env) == first  # reproducible on one machine


@pytest.mark.parametrize("cpu", ["older", "GENERIC"])
def test_a_cpu_without_vnni_prints_what_float32_prints_everywhere(env, cpu, request):
    """The same words on an older CPU: under an emulated CPU without VNNI (the kernel family just
    below this machine's best: AVX2 under AVX-512, AVX under AVX2; GENERIC, with no vector extension
    CTranslate2 knows, runs with --long) the service computes in float32 on its own, since int8
    loses words there, and the quick start prints exactly what float32 prints with this machine's
    kernels: the README's line up to one word."""
    if cpu == "GENERIC":
        needs_long(request, "the quick start on GENERIC kernels")
    older = quick_start({**env, **OLDER_CPUS[older_than_this_cpu() if cpu == "older" else cpu]})
    assert words_apart(readme_line(), older) <= 1, older
    assert older == quick_start(env, TRANSCRIBER_COMPUTE_TYPE="float32")


VNNI_CPU = frozenset("sse4_1 avx avx2 avx512f avx512_vnni".split())
AVX2_CPU = frozenset("sse4_1 avx avx2 fma".split())


@pytest.mark.parametrize("flags, env, chosen", [
    (VNNI_CPU, {}, "int8"),
    (AVX2_CPU | {"avx_vnni"}, {}, "int8"),                                  # AVX-VNNI without AVX-512
    (AVX2_CPU, {}, "float32"),
    (VNNI_CPU - {"avx512_vnni"}, {}, "float32"),                            # AVX-512 before VNNI
    (VNNI_CPU, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "float32"),                  # held to older kernels
    (VNNI_CPU, {"MKL_ENABLE_INSTRUCTIONS": "AVX512"}, "float32"),
    (VNNI_CPU, {"ONEDNN_MAX_CPU_ISA": "avx512_core_vnni"}, "int8"),
    (VNNI_CPU, {"MKL_ENABLE_INSTRUCTIONS": "AVX512_E1", "ONEDNN_MAX_CPU_ISA": "ALL"}, "int8"),
])
def test_int8_is_chosen_only_where_its_products_are_exact(flags, env, chosen):
    """With TRANSCRIBER_COMPUTE_TYPE unset, a CPU computes in int8 only where it
    multiplies bytes with VNNI (the int8 kernels of older sets saturate), including when a
    library is held to an older set than the CPU's; float16 on CUDA."""
    from audio.whisper import default_compute

    assert default_compute("cpu", flags, env) == chosen
    assert default_compute("cuda", flags, env) == "float16"
