from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "dpportal.accounts"
    label = "accounts"

    def ready(self):
        from . import throttle

        throttle.connect()
