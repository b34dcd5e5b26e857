from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "dpportal.dashboards"
    label = "dashboards"
    verbose_name = "Utility dashboards"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dpportal.releases.services.jobs import table_made

        from .tasks import queue_reports

        table_made.connect(queue_reports, dispatch_uid="dpportal-dashboards-reports")
