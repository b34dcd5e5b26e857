from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "dpportal.datasets"
    label = "datasets"

    def ready(self):
        from django.db.models.signals import post_delete

        from dpportal import jobs

        from . import checks
        from .models import Dataset, SchemaCheck

        post_delete.connect(_remove_raw_file, sender=Dataset, dispatch_uid="dpportal-dataset-raw-file")
        jobs.register(jobs.JobTable("schema check", SchemaCheck, checks.fail_stranded))  # swept by releases/sweeper


def _remove_raw_file(sender, instance, **kwargs):
    """A dataset deleted (the admin, a shell) takes its raw file with it, once the deletion commits."""
    from django.db import transaction

    from dpportal import storage

    if instance.file_path:
        key = instance.file_path
        transaction.on_commit(lambda: storage.delete(key))
