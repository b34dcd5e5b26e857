"""Threads per job (mechanisms/resources.py): the rule concurrency x threads <= cores, the environment
overrides with clear refusals, and limit_threads reaching torch, BLAS and XLA's flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mechanisms import resources

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cores(monkeypatch):
    monkeypatch.delenv(resources.THREADS_ENV, raising=False)
    monkeypatch.delenv(resources.CONCURRENCY_ENV, raising=False)

    def set_cores(n: int) -> None:
        monkeypatch.setattr(resources, "available_cores", lambda: n)

    return set_cores


@pytest.mark.parametrize(
    "n_cores, concurrency, expected", [(2, None, 2), (2, "2", 1), (8, "3", 2), (2, "4", 1), (16, "4", 4)]
)
def test_each_job_gets_its_share_of_the_cores(cores, monkeypatch, n_cores, concurrency, expected):
    cores(n_cores)
    if concurrency:
        monkeypatch.setenv(resources.CONCURRENCY_ENV, concurrency)
    n = resources.threads_per_job()
    assert n == expected
    assert n * resources.worker_concurrency() <= max(n_cores, resources.worker_concurrency())


def test_the_environment_overrides_the_share(cores, monkeypatch):
    cores(2)
    monkeypatch.setenv(resources.CONCURRENCY_ENV, "2")
    monkeypatch.setenv(resources.THREADS_ENV, "3")
    assert resources.threads_per_job() == 3


@pytest.mark.parametrize("var", [resources.THREADS_ENV, resources.CONCURRENCY_ENV])
@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_value_is_refused_naming_the_variable(cores, monkeypatch, var, bad):
    monkeypatch.setenv(var, bad)
    with pytest.raises(ValueError, match=f"{var}={bad!r}".replace(".", r"\.")):
        resources.threads_per_job()


def test_xla_flags_replace_the_thread_flags_and_keep_the_others():
    flags = resources.xla_flags(3, "--xla_force_host_platform_device_count=2 intra_op_parallelism_threads=8")
    assert flags.split() == ["--xla_force_host_platform_device_count=2", "--xla_cpu_multi_thread_eigen=false"]


LIMIT_SCRIPT = """
import json, os, sys
import numpy, torch  # loaded BEFORE the limit: threadpoolctl and torch must still be reached
from threadpoolctl import threadpool_info
from mechanisms.resources import limit_threads
limit_threads(int(sys.argv[1]))
pools = [p["num_threads"] for p in threadpool_info()]
print(json.dumps({"torch": torch.get_num_threads(), "pools": pools, "xla": os.environ["XLA_FLAGS"],
                  "omp": os.environ["OMP_NUM_THREADS"], "openblas": os.environ["OPENBLAS_NUM_THREADS"]}))
"""


@pytest.mark.slow
def test_limit_threads_reaches_torch_blas_and_xla():
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "4", "XLA_FLAGS": "--xla_dump_to=/tmp/x"}
    out = subprocess.run(
        [sys.executable, "-c", LIMIT_SCRIPT, "1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["torch"] == 1 and got["pools"] and set(got["pools"]) == {1}, got
    assert got["omp"] == got["openblas"] == "1"
    assert got["xla"] == "--xla_dump_to=/tmp/x --xla_cpu_multi_thread_eigen=false"


def test_limit_threads_refuses_a_bad_count():
    with pytest.raises(ValueError, match="n=0"):
        resources.limit_threads(0)


@pytest.mark.slow
def test_dpmerf_sizes_torch_through_resources():
    script = (
        "import os, torch; torch.set_num_threads(2); from mechanisms.synthesizers import dpmerf; t = dpmerf._torch(); "
        "print(t.get_num_threads(), os.environ['OMP_NUM_THREADS'])"
    )
    env = {"PATH": "/usr/bin:/bin", resources.THREADS_ENV: "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["1", "1"]


FLAGS_SCRIPT = """
import os, sys
from mechanisms.resources import limit_threads
limit_threads(1)
os.environ["XLA_FLAGS"] += " --xla_dump_to=" + sys.argv[1]  # appended after the thread flags, as load_mbi does
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2 + 1)(jnp.ones(3)).block_until_ready()
"""


def test_flags_appended_after_the_thread_flags_reach_xla(tmp_path):
    """pgm.load_mbi appends its XLA flags after limit_threads' thread flags. If those
    ended with the bare token ``intra_op_parallelism_threads=1``, after which XLA's parser ignores every
    flag: the optimisation-level and fusion flags would never apply. A flag appended last must take effect
    (here --xla_dump_to, which writes the compiled program's HLO); with the old token it writes nothing."""
    dump = tmp_path / "dump"
    subprocess.run(
        [sys.executable, "-c", FLAGS_SCRIPT, str(dump)],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert dump.is_dir() and any(dump.iterdir()), "XLA ignored a flag written after the thread flags"


POOL_SCRIPT = """
import json, os
from mechanisms.pgm import load_mbi
load_mbi()
import jax.numpy as jnp
(jnp.ones((256, 256)) * 2).sum().block_until_ready()
tids = os.listdir("/proc/self/task")
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in tids]
print(json.dumps({"pool": sum("XLAEigen" in n for n in names), "cpus": len(os.sched_getaffinity(0)),
                  "masks": sorted({len(os.sched_getaffinity(int(t))) for t in tids}), "xla": os.environ["XLA_FLAGS"]}))
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs an affinity mask of two or more CPUs",
)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.slow
def test_xla_intra_op_pool_has_the_jobs_threads_and_every_thread_all_cpus(threads):
    """XLA runs large loops on its own pool, one thread per CPU unless the backend starts under a smaller
    mask (AIM used 1.4 cores as a one-thread job before this). ``load_mbi`` starts it with the job's
    threads, then gives every thread the whole mask back. Mutants run: no ``start_jax_cpu_backend`` call
    (pool of 2 for one thread: fails), the mask not restored (the pool thread keeps 1 CPU: fails). LLVM's code
    generation is split into as many parts as the job has threads (XLA's default, 32 parts on a pool of
    one thread per CPU, compiled a one-thread job's programs on both cores)."""
    env = {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "DPPORTAL_THREADS_PER_JOB": str(threads)}
    out = subprocess.run(
        [sys.executable, "-c", POOL_SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["pool"] == threads
    assert got["masks"] == [got["cpus"]], "a thread kept the narrowed affinity mask"
    assert f"--xla_cpu_parallel_codegen_split_count={threads}" in got["xla"].split()


def test_limit_memory_turns_an_allocation_past_it_into_a_memory_error():
    import subprocess
    import sys

    code = (
        "import numpy as np\nfrom mechanisms.resources import limit_memory\n"
        "assert not limit_memory(0)\nassert limit_memory(512)\n"
        "small = np.ones(2**24)\n"  # 128 MiB: within the limit
        "try:\n    np.ones(2**27)\nexcept MemoryError:\n    print('MemoryError')\n"
    )  # 1 GiB: past it
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "MemoryError", out.stderr[-500:]
