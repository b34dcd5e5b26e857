"""Read-only admin views of the ledger: staff can look, nobody can add, edit or delete through the
admin (caps change only through ``services.set_caps`` by the dataset's steward)."""

from django.contrib import admin

from .models import Budget, LedgerEntry


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Budget)
class BudgetAdmin(ReadOnly):
    list_display = (
        "dataset",
        "eps_cap",
        "eps_spent",
        "eps_reserved",
        "delta_cap",
        "delta_spent",
        "delta_reserved",
        "head_seq",
    )


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnly):
    list_display = (
        "dataset",
        "seq",
        "kind",
        "created_at",
        "username",
        "release_pk",
        "mechanism",
        "epsilon",
        "delta",
        "guarantee",
    )
    list_filter = ("kind",)
