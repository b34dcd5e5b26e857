from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "dpportal.releases"
    label = "releases"

    def ready(self) -> None:
        from celery.signals import worker_ready

        worker_ready.connect(_start_sweeper, weak=False, dispatch_uid="dpportal-sweeper")


def _start_sweeper(**kwargs) -> None:
    """Every worker, at startup and then periodically, fails releases whose worker vanished."""
    from .sweeper import start_periodic

    start_periodic()
