from django.urls import path

from . import tables, views

urlpatterns = [
    path("auth/token/", views.token, name="dpportal-api-token"),
    path("auth/tokens/", views.tokens, name="dpportal-api-tokens"),
    path("auth/tokens/<int:pk>/", views.token_revoke, name="dpportal-api-token-revoke"),
    path("mechanisms/", views.mechanisms, name="dpportal-api-mechanisms"),
    # datasets
    path("datasets/", views.datasets, name="dpportal-api-datasets"),
    path("datasets/<int:pk>/", views.dataset, name="dpportal-api-dataset"),
    path("datasets/<int:pk>/schema/", views.schema, name="dpportal-api-schema"),
    path("datasets/<int:pk>/schema/check/", views.schema_check, name="dpportal-api-schema-check"),
    path("datasets/<int:pk>/recommendation/", views.recommendation, name="dpportal-api-recommendation"),
    path("datasets/<int:pk>/raw/", views.dataset_raw, name="dpportal-api-dataset-raw"),
    path("datasets/<int:pk>/budget/", views.budget, name="dpportal-api-budget"),
    path("datasets/<int:pk>/releases/", views.dataset_releases, name="dpportal-api-dataset-releases"),
    path("datasets/<int:pk>/releases/estimate/", views.release_estimate, name="dpportal-api-release-estimate"),
    path("datasets/<int:pk>/ledger/", views.dataset_ledger, name="dpportal-api-ledger"),
    path("datasets/<int:pk>/bounds/", views.dataset_bounds, name="dpportal-api-bounds"),
    # releases
    path("releases/<int:pk>/", views.release, name="dpportal-api-release"),
    path("releases/<int:pk>/draws/", views.release_draws, name="dpportal-api-release-draws"),
    path("releases/<int:pk>/risk/", views.release_risk, name="dpportal-api-release-risk"),
    path("releases/<int:pk>/cancel/", views.release_cancel, name="dpportal-api-release-cancel"),
    path("releases/<int:pk>/synthetic.csv", views.release_csv, name="dpportal-api-release-csv"),
    path(
        "releases/<int:pk>/synthetic-spreadsheet.csv",
        views.release_csv_spreadsheet,
        name="dpportal-api-release-csv-spreadsheet",
    ),
    path("releases/<int:pk>/manifest.json", views.release_manifest, name="dpportal-api-release-manifest"),
    path("releases/<int:pk>/tables/", tables.tables, name="dpportal-api-release-tables"),
    path("releases/<int:pk>/tables/<int:index>/", tables.table, name="dpportal-api-release-table"),
]
