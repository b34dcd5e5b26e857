from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "dpportal.accounts"
    label = "accounts"

    def ready(self):
        from django.db.backends.signals import connection_created

        from dpportal.private import protect_database

        from . import throttle

        throttle.connect()
        connection_created.connect(protect_database, dispatch_uid="dpportal-private-database")
