"""Sending a job to its queue, by the task's registered name: the planners (``planning``,
``dp_bounds``) never import the tasks that run what they planned, so the worker side
(``releases/tasks.py`` -> ``jobs`` -> the planners' modules) and the planning side form no circle."""

from __future__ import annotations

from celery import current_app

from ..models import Release

RUN_RELEASE = "dpportal.releases.tasks.run_release"


def send(task_name: str, args: list, *, queue: str | None = None) -> None:
    """Send ``task_name(*args)``; with DPPORTAL_TASKS_EAGER it runs here and now (debugging)."""
    if current_app.conf.task_always_eager:
        current_app.loader.import_default_modules()  # the tasks modules, as a worker loads them
        current_app.tasks[task_name].apply(args=args)
        return
    current_app.send_task(task_name, args=args, **({"queue": queue} if queue else {}))


def enqueue(release_id: int) -> None:
    """Send the release's job to the queue recorded on its row (``estimates.queue_for``; draws: fast).
    Call it from ``transaction.on_commit``: the job is queued only once its reservation committed."""
    queue = Release.objects.filter(pk=release_id).values_list("queue", flat=True).first() or Release.QUEUE_SYNTHESIS
    send(RUN_RELEASE, [release_id], queue=queue)
