from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dpportal.accounts import views as account_views
from dpportal.datasets import views as datasets
from dpportal.releases.tables import views as release_tables
from dpportal.releases import views as releases

urlpatterns = [
    path("", datasets.home, name="home"),
    path("accounts/login/", account_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", account_views.PasswordChange.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/tokens/", account_views.api_tokens, name="dpportal-api-tokens-page"),
    path("admin/", admin.site.urls),
    path("api/", include("dpportal.api.urls")),
    # datasets
    path("datasets/", datasets.dataset_list, name="dpportal-datasets"),
    path("datasets/upload/", datasets.dataset_upload, name="dpportal-upload"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dpportal-dataset"),
    path("datasets/<int:pk>/schema/", datasets.dataset_schema, name="dpportal-schema"),
    path("datasets/<int:pk>/schema/check/", datasets.dataset_schema_check, name="dpportal-schema-check"),
    path("datasets/<int:pk>/schema.json", datasets.dataset_schema_export, name="dpportal-schema-export"),
    path("datasets/<int:pk>/schema/import/", datasets.dataset_schema_import, name="dpportal-schema-import"),
    path("datasets/<int:pk>/schema/dp-bounds/", datasets.dataset_schema_dp_bounds, name="dpportal-schema-dp-bounds"),
    path("datasets/<int:pk>/budget/", datasets.dataset_budget, name="dpportal-budget"),
    path("datasets/<int:pk>/raw/delete/", datasets.dataset_raw_delete, name="dpportal-raw-delete"),
    path("datasets/<int:pk>/grants/", datasets.dataset_grant, name="dpportal-grant"),
    # releases
    path("datasets/<int:pk>/releases/new/", releases.release_new, name="dpportal-release-new"),
    path("releases/<int:pk>/", releases.release_detail, name="dpportal-release"),
    path("releases/<int:pk>/status.json", releases.release_status, name="dpportal-release-status"),
    path("releases/<int:pk>/synthetic.csv", releases.release_download, name="dpportal-release-csv"),
    path(
        "releases/<int:pk>/synthetic-spreadsheet.csv",
        releases.release_download_spreadsheet,
        name="dpportal-release-csv-spreadsheet",
    ),
    path("releases/<int:pk>/manifest.json", releases.release_manifest, name="dpportal-release-manifest"),
    path("releases/<int:pk>/report/", releases.release_report, name="dpportal-release-report"),
    path("releases/<int:pk>/draw/", releases.release_draw, name="dpportal-release-draw"),
    path("releases/<int:pk>/edit/", releases.release_edit, name="dpportal-release-edit"),
    path("releases/<int:pk>/cancel/", releases.release_cancel, name="dpportal-release-cancel"),
    path("releases/<int:pk>/tables.json", release_tables.tables_file, name="dpportal-release-tables-json"),
    path("releases/<int:pk>/tables/<int:index>/", release_tables.table_page, name="dpportal-release-table"),
    path("releases/<int:pk>/tables/<int:index>.csv", release_tables.table_csv, name="dpportal-release-table-csv"),
    path("releases/<int:pk>/tables/<int:index>.json", release_tables.table_json, name="dpportal-release-table-json"),
    # ledger and dashboards: their own URL modules
    path("", include("dpportal.ledger.urls")),
    path("", include("dpportal.dashboards.urls")),
]
