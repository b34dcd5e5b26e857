"""The sweep loop beside every worker: one sweeps per data directory, the others wait and take over
when it ends; each worker reaps its loop (no zombie process) and starts it again if it died."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time

import pytest

from dpportal.releases import sweeper


def test_a_waiting_loop_takes_over_when_the_sweeping_loop_ends(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    settings.DPPORTAL_SWEEP_SECONDS = 0.02
    swept = []
    monkeypatch.setattr(sweeper, "sweep_once", lambda: swept.append(1))
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    monkeypatch.setattr(sweeper, "_alive", lambda pid: parent.poll() is None)
    held = open(tmp_path / "sweeper.lock", "a")
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another worker's loop sweeps
    loop = threading.Thread(target=sweeper.run_loop, args=(parent.pid,), daemon=True)
    loop.start()
    time.sleep(0.3)
    assert loop.is_alive() and swept == []  # waiting, not gone (a loop that ended at once was a zombie)
    held.close()  # the sweeping loop's worker died: its lock is released
    deadline = time.monotonic() + 5
    while not swept and time.monotonic() < deadline:
        time.sleep(0.02)
    assert swept  # taken over
    parent.kill()
    parent.wait()
    loop.join(timeout=5)
    assert not loop.is_alive()  # its own worker gone: it ends


def test_the_worker_reaps_its_loop_and_starts_it_again(settings, monkeypatch):
    settings.DPPORTAL_SWEEP_SECONDS = 0.01
    started = []

    class Loop:  # a loop process that ends at once (killed)
        def __init__(self, command, **kw):
            started.append(command)
            self.waited = False

        def wait(self):
            self.waited = True
            return -9

    monkeypatch.setattr(sweeper.subprocess, "Popen", Loop)
    stop = threading.Event()
    thread = sweeper.spawn_loop(stop)
    deadline = time.monotonic() + 5
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=5)
    assert len(started) >= 3 and thread.daemon and not thread.is_alive()
    assert started[0][-3:] == ["--loop", "--parent", str(os.getpid())]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_real_loop_that_ends_leaves_no_zombie(settings, tmp_path, monkeypatch):
    settings.DPPORTAL_SWEEP_SECONDS = 60
    command = [sys.executable, "-c", "pass"]
    real = subprocess.Popen
    children = []
    monkeypatch.setattr(
        sweeper.subprocess, "Popen", lambda _c, **kw: children.append(real(command, **kw)) or children[-1]
    )
    stop = threading.Event()
    thread = sweeper.spawn_loop(stop)
    deadline = time.monotonic() + 10
    while (not children or children[0].returncode is None) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    thread.join(timeout=5)
    pid = children[0].pid
    assert children[0].returncode == 0 and not os.path.exists(f"/proc/{pid}")  # waited for: no <defunct> entry
