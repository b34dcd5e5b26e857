from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "dpportal.dashboards"
    label = "dashboards"
    verbose_name = "Utility dashboards"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from dpportal import jobs
        from dpportal.releases.services.jobs import table_made

        from . import risk, services
        from .models import Evaluation, RiskReport
        from .tasks import queue_reports

        table_made.connect(queue_reports, dispatch_uid="dpportal-dashboards-reports")
        jobs.register(jobs.JobTable("evaluation", Evaluation, services.fail_stranded))  # swept by releases/sweeper
        jobs.register(jobs.JobTable("risk report", RiskReport, risk.fail_stranded))
