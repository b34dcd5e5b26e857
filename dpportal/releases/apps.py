from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "dpportal.releases"
    label = "releases"
