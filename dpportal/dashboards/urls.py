from django.urls import path

from . import views

urlpatterns = [
    # utility dashboards (steward-only, computed from raw data)
    path("releases/<int:pk>/dashboard/", views.release_dashboard, name="dpportal-release-dashboard"),
    path("releases/<int:pk>/evaluation.json", views.evaluation_status, name="dpportal-evaluation-status"),
    path("releases/<int:pk>/risk/", views.release_risk, name="dpportal-release-risk"),
    path("releases/<int:pk>/evaluate/", views.release_reevaluate, name="dpportal-release-evaluate"),
    path("datasets/<int:pk>/dashboard/", views.dataset_dashboard, name="dpportal-dataset-dashboard"),
    path("datasets/<int:pk>/dashboard/target/", views.dataset_target, name="dpportal-dataset-target"),
    path("datasets/<int:pk>/compare/", views.release_compare, name="dpportal-release-compare"),
]
