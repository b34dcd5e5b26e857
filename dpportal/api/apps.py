from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "dpportal.api"
    label = "api"
