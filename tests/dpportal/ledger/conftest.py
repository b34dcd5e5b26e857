"""Helpers for the ledger tests: the steward who owns the dataset, an analyst granted
its releases, an outsider who must see nothing."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # PBKDF2 costs ~0.3 s/user


@pytest.fixture
def personas(db):
    from dpportal.accounts.models import make_user

    steward = make_user("stella", "pw-stella-123", role="steward")
    other = make_user("otto", "pw-otto-123", role="steward")
    analyst = make_user("ana", "pw-ana-123", role="analyst")
    return {"steward": steward, "other_steward": other, "analyst": analyst}


@pytest.fixture
def dataset(personas):
    from dpportal.datasets.models import Dataset

    ds = Dataset.objects.create(owner=personas["steward"], name="adult")
    ds.analysts.add(personas["analyst"])
    return ds


@pytest.fixture
def make_release(dataset, personas):
    from dpportal.releases.models import Release

    def make(epsilon="0.1", delta="0", mechanism="baseline", **kw):
        return Release.objects.create(dataset=dataset, created_by=personas["steward"], mechanism=mechanism,
                                      params=kw.pop("params", {"bins": 10}), epsilon=epsilon, delta=delta,
                                      rows=100, schema={}, schema_fingerprint="f" * 64, **kw)
    return make


@pytest.fixture
def budget(dataset, personas):
    from dpportal.ledger import services

    services.set_caps(dataset, epsilon="1", delta="1e-5", user=personas["steward"])
    return dataset
