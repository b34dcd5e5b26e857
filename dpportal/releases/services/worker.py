"""The worker side of a synthesis release: claim it, fit and sample (or draw more rows from a stored
summary), write the files, and settle the ledger in the same transaction as the final state."""

from __future__ import annotations

import logging
import os
import shutil
import time

from django.conf import settings
from django.utils import timezone

from mechanisms import registry, resources
from mechanisms.accounting import exact
from mechanisms.base import format_bytes, load_summary, save_summary
from mechanisms.io import write_synthetic_csv
from mechanisms.noise import Noise
from mechanisms.rules import sample_conforming
from mechanisms.runner import Release as RunnerRelease
from mechanisms.runner import build, run

from dpportal import jobs
from dpportal.jobs import Cancelled

from dpportal import storage

from .. import tables as release_tables
from ..models import Release
from .settlement import fail_running, finish

log = logging.getLogger(__name__)

# Overall progress bands: loading, fitting (mechanism's own progress), sampling, writing files
BAND_FIT = (0.05, 0.80)
BAND_SAMPLE = 0.85
BAND_WRITE = 0.95


def claim(release_id: int) -> bool:
    """Atomically move a queued release to running; False if another delivery got it first."""
    return (
        Release.objects.filter(pk=release_id, status=Release.QUEUED).update(
            status=Release.RUNNING, started_at=timezone.now(), stage="starting", progress=0.01
        )
        == 1
    )


def fail_abandoned(release_id: int) -> bool:
    """A redelivered message for a release still marked running: its worker died mid-job (acks_late
    + reject_on_worker_lost redeliver it). Mark it failed, never run it twice; the budget is spent
    if the job had touched data, refunded otherwise."""
    return fail_running(release_id)


def _raise_if_cancelled(release_id: int) -> None:
    Progress(release_id).raise_if_cancelled()


class Progress(jobs.Progress):
    """A running release's progress callback (``dpportal.jobs.Progress`` on its row): raises Cancelled
    once the steward asked to cancel; ``.band(*BAND_FIT)`` is the fit's part."""

    def __init__(self, release_id: int):
        super().__init__(Release, release_id)


def execute_synthesis(release_id: int) -> None:
    """Run a claimed synthesis release (or draw) to completion. Every failure is recorded on the row, never
    raised."""
    release = Release.objects.select_related("dataset", "parent").get(pk=release_id)
    progress = Progress(release_id)
    workdir = release.storage_dir()
    tmpdir = workdir.with_name(f"{workdir.name}.tmp")
    try:
        shutil.rmtree(tmpdir, ignore_errors=True)
        tmpdir.mkdir(parents=True)
        if release.is_draw:
            result = _draw(release, progress)
        else:
            result = _fit_and_sample(release, progress)
        progress(BAND_WRITE, "writing the synthetic table", force=True)
        write_synthetic_csv(result.synthetic, tmpdir / "synthetic.csv", result.mechanism.release_schema)
        if not release.is_draw:
            with open(tmpdir / "summary.npz", "wb") as fh:
                save_summary(result.mechanism.summary(), fh)
            release_tables.write(result.mechanism, tmpdir)  # free post-processing; a failure is logged, skipped
        shutil.rmtree(workdir, ignore_errors=True)
        os.replace(tmpdir, workdir)  # outputs appear all at once, never half-written
        storage.publish_dir(workdir)  # to the object store, when one is configured (dpportal/storage.py)
        rel = workdir.relative_to(settings.DATA_DIR)
        report = release.parent.report if release.is_draw else _report(result)
        finish(
            release_id,
            status=Release.DONE,
            progress=1.0,
            stage="done",
            report=report,
            output_file=str(rel / "synthetic.csv"),
            summary_file=release.parent.summary_file if release.is_draw else str(rel / "summary.npz"),
        )
    except BaseException as exc:  # noqa: BLE001 - record every failure, including time limits
        shutil.rmtree(tmpdir, ignore_errors=True)
        if isinstance(exc, Cancelled):
            log.info("release %s cancelled by the steward", release_id)
        else:
            log.exception("release %s failed", release_id)
        message = failure_text(exc)
        if isinstance(exc, Cancelled):
            finish(release_id, status=Release.CANCELLED, stage="cancelled", error=message)
        else:
            finish(release_id, status=Release.FAILED, stage="failed", error=message)
        if not isinstance(exc, Exception):
            raise


def failure_text(exc: BaseException) -> str:
    """One line for the steward. A shutdown is named as such: billiard ends a pool process on a
    cold shutdown (second Ctrl-C) with SystemExit(-(256 - signal)), whose text was a bare '-241'."""
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        code = getattr(exc, "code", None)
        how = ""
        if isinstance(code, int) and -255 <= code < 0:
            import signal

            try:
                how = f" by {signal.Signals(256 + code).name}"
            except ValueError:
                how = f" (exit code {code})"
        return f"the worker was shut down{how} while this job ran ({type(exc).__name__}); submit the release again"
    if isinstance(exc, MemoryError):
        return (
            f"the job needed more memory than the limit of {settings.DPPORTAL_JOB_MEMORY_LIMIT_MB:,} MiB per "
            "job (DPPORTAL_JOB_MEMORY_LIMIT_MB) and was stopped: ask for fewer rows or smaller parameters, "
            "or exclude or coarsen columns"
        )
    return (str(exc).splitlines() or [type(exc).__name__])[0][:500] or type(exc).__name__


def mark_data_touched(release_id: int) -> None:
    """Conditional on the job still being ours: if another delivery already
    declared it abandoned (failed, possibly refunded), this worker must not read the data at all.
    The two UPDATEs of the row are serialized, so either the flag is set first (the ledger then
    charges, never refunds) or the job is failed first (and nothing is read)."""
    _raise_if_cancelled(release_id)  # a cancel requested before the data is read: nothing read, refunded
    if not Release.objects.filter(pk=release_id, status=Release.RUNNING, cancel_requested_at__isnull=True).update(
        data_touched=True, stage="reading data"
    ):
        _raise_if_cancelled(release_id)
        raise RuntimeError(f"release {release_id} is no longer running here; its data was not read")


def _fit_and_sample(release: Release, progress: Progress) -> RunnerRelease:
    schema = release.public_schema()
    progress(0.02, "preparing", force=True)
    resources.limit_threads(resources.threads_per_job())  # concurrency x threads <= cores
    mech = build(
        release.mechanism,
        schema,
        epsilon=release.epsilon,
        delta=release.delta,
        params=release.params,
        noise=Noise.secure_backend(),
        progress=progress.band(*BAND_FIT),
    )
    source = release.dataset.source(schema)
    log.info(  # the job's memory plan, checked against DPPORTAL_MAX_JOB_MEMORY_MB when the release was asked for
        "release %s: %s on %s rows plans a peak of %s",
        release.pk,
        release.mechanism,
        f"{source.n:,}",
        format_bytes(mech.planned_memory_bytes(source.n)),
    )
    result = run(mech, source, release.rows, on_data_access=lambda: mark_data_touched(release.pk))
    progress(BAND_SAMPLE, "synthetic rows drawn", force=True)
    return result


def _draw(release: Release, progress: Progress) -> RunnerRelease:
    origin = release.parent
    progress(0.1, "loading the private summary", force=True)
    cls = registry.get(origin.mechanism)
    with open(origin.summary_path(), "rb") as fh:
        summary = load_summary(fh)
    mech = cls.from_summary(
        origin.public_schema(),
        summary,
        epsilon=float(exact(origin.epsilon)),
        delta=float(exact(origin.delta)),
        params=origin.params,
        noise=Noise.secure_backend(),
    )
    progress(0.3, "drawing rows", force=True)
    t0 = time.perf_counter()
    synthetic = sample_conforming(  # the public rules hold; a cancel is heard between rejection rounds
        mech.sample, mech.release_schema, release.rows, progress=lambda f, stage: progress(0.3 + 0.5 * f, stage)
    )
    return RunnerRelease(mech, synthetic, 0.0, time.perf_counter() - t0)


def _report(result: RunnerRelease) -> dict:
    report = result.report()
    report["seconds_fit"] = round(result.seconds_fit, 3)
    report["seconds_sample"] = round(result.seconds_sample, 3)
    return report
