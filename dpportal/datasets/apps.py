from django.apps import AppConfig


class DatasetsConfig(AppConfig):
    name = "dpportal.datasets"
    label = "datasets"
