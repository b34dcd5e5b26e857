from django.urls import path

from . import views

urlpatterns = [
    # ledger review (steward-only)
    path("datasets/<int:pk>/ledger/", views.ledger_page, name="dpportal-ledger"),
    path("datasets/<int:pk>/ledger.csv", views.ledger_csv, name="dpportal-ledger-csv"),
    path("datasets/<int:pk>/ledger.json", views.ledger_json, name="dpportal-ledger-json"),
]
