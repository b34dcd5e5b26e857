"""Threads per job: size every numeric library's thread pool so that concurrent jobs do not fight.

A worker runs ``concurrency`` jobs at once. Left alone, torch, BLAS (OpenBLAS / MKL via numpy, scipy,
scikit-learn) and XLA (JAX) each start one thread per core in every job, so two jobs on two cores run
four or more busy threads and spin-wait on each other: measured on the 2-core machine,
DP-MERF's 200 epochs took 13 s on one torch thread and 30 s on two while another job ran. The rule here:

    concurrency x threads_per_job <= cores

``threads_per_job()`` is ``DPPORTAL_THREADS_PER_JOB`` when set, otherwise
``max(1, cores // DPPORTAL_WORKER_CONCURRENCY)`` (concurrency 1 when unset), where ``cores`` is the
number of CPUs this process may run on (its affinity mask, so a container's cpuset counts).
``limit_threads(n)`` applies ``n`` to everything it can reach:

* torch: ``torch.set_num_threads(n)`` when torch is already imported (DP-MERF imports it lazily and
  calls ``limit_threads`` itself);
* BLAS / OpenMP pools already loaded: threadpoolctl;
* libraries not loaded yet: ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and,
  for JAX, ``XLA_FLAGS`` with ``--xla_cpu_multi_thread_eigen=false``. (Not the often-quoted
  ``intra_op_parallelism_threads=n``: it is no XLA flag, and XLA's parser ignores every flag written after
  that bare token, which would silently disable the flags ``pgm.load_mbi`` appends.)
  XLA reads its flags once, when JAX starts its CPU backend: set them before JAX is imported (the
  Celery app calls :func:`configure_environment` at start-up for that reason).
* XLA's own intra-op pool (it runs large loops on it whatever the Eigen flag says): sized from the CPUs
  the starting thread may use, so :func:`start_jax_cpu_backend` (called by ``pgm.load_mbi``) starts the
  backend under a mask of ``n`` CPUs and then gives every thread the whole mask back.

No Django here: the worker, the CLI and the benchmarks share it.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

THREADS_ENV = "DPPORTAL_THREADS_PER_JOB"
CONCURRENCY_ENV = "DPPORTAL_WORKER_CONCURRENCY"
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
XLA_THREAD_FLAGS = ("--xla_cpu_multi_thread_eigen", "intra_op_parallelism_threads")  # the second removed, never set


def available_cores() -> int:
    """CPUs this process may run on (the affinity mask; os.cpu_count() where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _positive_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive whole number, got {name}={raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be a positive whole number, got {name}={raw!r}")
    return value


def worker_concurrency() -> int:
    """Jobs a worker runs at once: DPPORTAL_WORKER_CONCURRENCY, default 1."""
    return _positive_env(CONCURRENCY_ENV) or 1


def threads_per_job() -> int:
    """DPPORTAL_THREADS_PER_JOB, else max(1, cores // worker concurrency)."""
    return _positive_env(THREADS_ENV) or max(1, available_cores() // worker_concurrency())


def xla_flags(n: int, existing: str = "") -> str:
    """``existing`` XLA flags with the CPU thread flags replaced: Eigen's thread pool off (XLA's CPU
    kernels then run on the caller's thread). A bare ``intra_op_parallelism_threads=...`` inherited from
    the environment is dropped: XLA ignores every flag after it (measured: a compile-time flag written
    after it had no effect, written before it did)."""
    _check(n)
    kept = [f for f in existing.split() if not f.startswith(XLA_THREAD_FLAGS)]
    return " ".join(kept + ["--xla_cpu_multi_thread_eigen=false"])


def configure_environment(n: int) -> None:
    """Environment for libraries not loaded yet (OpenMP, MKL, OpenBLAS, XLA); inherited by children."""
    _check(n)
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    os.environ["XLA_FLAGS"] = xla_flags(n, os.environ.get("XLA_FLAGS", ""))
    if "jax" in sys.modules:
        log.info("JAX already imported: XLA_FLAGS applies to processes started from here on")


def limit_threads(n: int) -> int:
    """Limit this process's numeric libraries to ``n`` threads each (see the module docstring).
    Returns ``n``."""
    configure_environment(n)
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    return n


def start_jax_cpu_backend(n: int) -> None:
    """Start JAX's CPU backend (if it has not started) with ``n`` threads in XLA's intra-op pool.

    ``--xla_cpu_multi_thread_eigen=false`` only keeps matrix products single-threaded: XLA's CPU runtime
    still runs large loops on its own "XLAEigen" pool, one thread per CPU the process may use, counted when
    the backend starts. Measured without it: AIM on credit_default_taiwan at epsilon 1 used 660 CPU s
    in 468 s wall, adult at 10 1,218 in 734 s, beside another one-thread job on the 2-core machine. So the
    backend is started while this thread may run on ``n`` CPUs only (the pool is sized from that), and
    every thread of the process then gets the whole mask back (threads inherit the mask they were created
    with). No effect where ``n`` covers every CPU, the backend already runs, or there is no affinity API.
    The Python thread still works beside the pool while XLA executes (JAX dispatches asynchronously), so a
    one-thread AIM job can use two cores for a while: measured, 586 CPU s in 572 s wall."""
    _check(n)
    import jax
    from jax._src import xla_bridge

    if getattr(xla_bridge, "backends_are_initialized", lambda: False)():  # private API: harmless if gone
        return
    try:
        full = os.sched_getaffinity(0)
    except AttributeError:  # pragma: no cover - non-Linux
        jax.devices("cpu")
        return
    if n >= len(full):
        jax.devices("cpu")
        return
    os.sched_setaffinity(0, set(sorted(full)[:n]))
    try:
        jax.devices("cpu")
    finally:
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), full)
            except OSError:  # pragma: no cover - a thread that ended meanwhile
                pass


def _check(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be a positive whole number, got n={n!r}")


def limit_memory(megabytes: int) -> bool:
    """Cap this process's data memory (RLIMIT_DATA: heap and private mappings, what numpy, torch and XLA
    allocate) at ``megabytes`` MiB, so a job that outgrows its plan gets a MemoryError and fails as a job
    instead of the kernel's OOM killer ending the whole worker. 0: no limit. Returns whether one was set."""
    import resource

    if megabytes <= 0:
        return False
    limit = int(megabytes) * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    return True
