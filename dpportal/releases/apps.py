from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "dpportal.releases"
    label = "releases"

    def ready(self) -> None:
        from celery.signals import worker_ready

        from dpportal import jobs

        from .sweeper import RELEASES

        jobs.register(RELEASES)  # every kind stored as a release row: releases, draws, bounds, discovery
        worker_ready.connect(_start_sweeper, weak=False, dispatch_uid="dpportal-sweeper")


def _start_sweeper(**kwargs) -> None:
    """Every worker, at startup and then periodically, has jobs whose process vanished failed and
    settled (by a loop process beside it: sweeper.spawn_loop)."""
    from .sweeper import spawn_loop

    spawn_loop()
