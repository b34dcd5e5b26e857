"""The ledger tests' dataset, releases and budget, owned by the personas' owner (tests/personas.py)
with the granted analyst."""

from __future__ import annotations

import pytest


@pytest.fixture
def dataset(personas):
    from dpportal.datasets.models import Dataset

    ds = Dataset.objects.create(owner=personas.owner, name="adult")
    ds.analysts.add(personas.analyst)
    return ds


@pytest.fixture
def make_release(dataset, personas):
    from dpportal.releases.models import Release

    def make(epsilon="0.1", delta="0", mechanism="baseline", **kw):
        return Release.objects.create(
            dataset=dataset,
            created_by=personas.owner,
            mechanism=mechanism,
            params=kw.pop("params", {"bins": 10}),
            epsilon=epsilon,
            delta=delta,
            rows=100,
            schema={},
            schema_fingerprint="f" * 64,
            **kw,
        )

    return make


@pytest.fixture
def budget(dataset, personas):
    from dpportal.ledger import services

    services.set_caps(dataset, epsilon="1", delta="1e-5", user=personas.owner)
    return dataset
