"""JAX and Private-PGM (``mbi``), imported lazily inside ``fit`` (never by the web process) after the
job's thread limit is set, and the C heap's freed memory given back after XLA's compilations."""

from __future__ import annotations

import os
import warnings

# XLA flags for AIM's and MST's programs. AIM compiles one program per model structure and the programs run
# in well under their compile time: optimisation level 0 and the CPU fusion emitters off compile faster in
# less memory (mechanisms/resources.py passes them through to XLA); same seed, one thread:
# bank_marketing at 10 140 -> 66 s, peak 889 -> 690 MiB; california_housing_numeric at 1 14.4 -> 7.9 s,
# 425 -> 358 MiB; execution-bound california_housing at 10 157 -> 164 s (docs/mechanisms/aim.md, "Speed").
# Estimates whose iterations outweigh the compile are compiled at level 2 (``optimisation_level``).
XLA_DEFAULT_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")


def xla_default_flags(threads: int) -> tuple[str, ...]:
    """XLA_DEFAULT_FLAGS plus LLVM's code generation split into as many parts as the job has threads.
    XLA splits every program's LLVM module into up to 32 parts compiled on a pool of its own, one thread per
    CPU: a one-thread job then compiled on both cores, and the parts cost more CPU in all than one module.
    Same seed, same path, one job thread, run one after the other (``python -m
    benchmarks.aim_profile --rounds 100000 --seed 7 --tvd``, the flag set in XLA_FLAGS): adult at 1 compile
    21.9 -> 16.1 CPU s, release 42.7 -> 39.3 s wall, 50.1 -> 43.6 CPU s; credit_default_taiwan at 1 compile
    82.6 -> 64.1 CPU s, 278.7 -> 277.2 s wall, 308 -> 287 CPU s (the parallel parts had hidden on the idle
    core: a busy worker has none); same models (2-way TVD 0.02266 and 0.01505 both ways)."""
    return (*XLA_DEFAULT_FLAGS, f"--xla_cpu_parallel_codegen_split_count={max(int(threads), 1)}")


def load_mbi():
    """Import JAX and Private-PGM for this job: threads limited first (XLA reads its flags at import),
    float64 on (mbi stalls in float32 on large n), XLA's intra-op pool started with the job's threads.
    Returns the ``mbi`` module."""
    from .. import resources

    threads = resources.threads_per_job()
    resources.limit_threads(threads)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    for flag in xla_default_flags(threads):  # the job's own XLA_FLAGS win
        if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    import jax

    jax.config.update("jax_enable_x64", True)
    resources.start_jax_cpu_backend(threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


_LIBC: list = []


def release_freed_memory() -> None:
    """Give the C heap's freed pages back to the operating system (glibc's ``malloc_trim``; a no-op
    elsewhere). XLA's compiler allocates and frees a few hundred MiB per program; glibc keeps the freed
    pages, so without this a job's resident memory ratchets up with every model structure and a worker
    keeps it after the job. Measured on credit_default_taiwan at epsilon 0.1 (AIM, one thread): peak
    RSS 667 -> 525-592 MiB, resident after the fit 596 -> about 490 MiB (docs/mechanisms/aim.md, "Memory")."""
    if not _LIBC:
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.append(libc.malloc_trim if hasattr(libc, "malloc_trim") else None)
        except OSError:  # pragma: no cover - not glibc
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)
