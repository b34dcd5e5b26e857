"""Per-object access helpers. Each fetches the object FOR THIS USER or raises Http404: other
people's objects are indistinguishable from objects that do not exist (404, never 403)."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import is_steward


def require_steward(user) -> None:
    if not is_steward(user):
        raise Http404("not found")


def dataset_for_owner(user, pk):
    """The dataset if ``user`` is its steward (raw data, schema, budget, ledger)."""
    from dpportal.datasets.models import Dataset

    require_steward(user)
    return get_object_or_404(Dataset, pk=pk, owner=user)


def dataset_for_viewer(user, pk):
    """The dataset if ``user`` owns it or is an analyst granted access to its releases."""
    from dpportal.datasets.models import Dataset

    if not user.is_authenticated:
        raise Http404("not found")
    dataset = get_object_or_404(Dataset, pk=pk)
    if dataset.owner_id == user.pk or dataset.analysts.filter(pk=user.pk).exists():
        return dataset
    raise Http404("not found")


def release_for_owner(user, pk):
    from dpportal.releases.models import Release

    require_steward(user)
    return get_object_or_404(Release.objects.select_related("dataset"), pk=pk, dataset__owner=user)


def release_for_viewer(user, pk):
    """Owner: any release. Granted analyst: finished releases only (no queue, failure or timing
    side channels), and none the steward withdrew."""
    from dpportal.releases.models import Release

    if not user.is_authenticated:
        raise Http404("not found")
    release = get_object_or_404(Release.objects.select_related("dataset"), pk=pk)
    if release.dataset.owner_id == user.pk:
        return release
    if (
        Release.objects.for_analysts().filter(pk=release.pk).exists()
        and release.dataset.analysts.filter(pk=user.pk).exists()
    ):
        return release
    raise Http404("not found")


def visible_datasets(user):
    from django.db.models import Q

    from dpportal.datasets.models import Dataset

    if not user.is_authenticated:
        return Dataset.objects.none()
    return Dataset.objects.filter(Q(owner=user) | Q(analysts=user)).distinct().order_by("-created_at")
