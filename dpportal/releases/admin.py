from django.contrib import admin

from .models import Release


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Read-only: releases change only through the services (the ledger depends on them)."""

    list_display = ("pk", "dataset", "mechanism", "epsilon", "delta", "rows", "status", "created_at")
    list_filter = ("status", "mechanism")

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
