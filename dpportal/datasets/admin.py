from django.contrib import admin

from .models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "n_rows", "created_at", "schema_confirmed_at")
    search_fields = ("name", "owner__username")
    filter_horizontal = ("analysts",)
    readonly_fields = ("file_path", "file_size", "encoding", "delimiter", "n_rows", "header", "schema_draft")
