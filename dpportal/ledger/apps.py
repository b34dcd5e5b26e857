from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "dpportal.ledger"
    label = "ledger"
    verbose_name = "Privacy ledger"
    default_auto_field = "django.db.models.BigAutoField"
