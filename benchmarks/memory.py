"""Peak resident memory of the CURRENT process, measured honestly.

``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is not enough for a process started by another one:
Linux carries the forking parent's peak into the child across exec, so a release launched from a
1.5 GiB evaluation process reports 1.5 GiB even if it used 9 MiB (checked: a child of a 1.5 GiB
parent reported ru_maxrss 1551 MiB and VmHWM 8.7 MiB). ``VmHWM`` in /proc/self/status is the
high-water mark of the address space that exec created: the process's own peak.
"""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # no /proc: an upper bound
