"""Peak resident memory of the CURRENT process, measured honestly.

``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is not enough for a process started by another one:
Linux carries the forking parent's peak into the child across exec, so a release launched from a
1.5 GiB evaluation process reports 1.5 GiB even if it used 9 MiB (checked: a child of a 1.5 GiB
parent reported ru_maxrss 1551 MiB and VmHWM 8.7 MiB). ``VmHWM`` in /proc/self/status is the
high-water mark of the address space that exec created: the process's own peak.
"""

from __future__ import annotations

import resource
import time


def peak_rss_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # no /proc: an upper bound


class AnonPeak:
    """Peak ANONYMOUS resident memory (``RssAnon``) of the current process, sampled by a daemon thread.

    ``VmHWM`` counts every resident page, including the read-only code of shared libraries mapped from
    disk (``RssFile``): about 150 MiB of an AIM release's 297 MiB peak is jaxlib's ``libjax_common.so``
    and OpenDP's library code, pages that worker processes share and the kernel can drop at will. The
    private part (heap, arrays, compiled programs) is ``RssAnon``; the kernel keeps no high-water mark
    for it, so this samples it every ``interval`` seconds (a lower bound: a spike shorter than the
    interval can be missed). Start it before the work, read ``mib()`` after.
    """

    def __init__(self, interval: float = 0.01):
        import threading

        self.peak_kib = 0
        self._interval = interval
        threading.Thread(target=self._loop, daemon=True).start()  # ends with the process

    def _sample(self) -> None:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("RssAnon:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                        return
        except OSError:
            pass

    def _loop(self) -> None:
        while True:
            self._sample()
            time.sleep(self._interval)

    def mib(self) -> float | None:
        """The peak so far (sampled once more now); None where /proc is not available."""
        self._sample()
        return self.peak_kib / 1024 if self.peak_kib else None
