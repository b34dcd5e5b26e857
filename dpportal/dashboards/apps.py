from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "dpportal.dashboards"
    label = "dashboards"
    verbose_name = "Utility dashboards"
    default_auto_field = "django.db.models.BigAutoField"
