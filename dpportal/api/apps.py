from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "dpportal.api"
    label = "api"

    def ready(self):
        from . import signals

        signals.connect()
