"""The one persona set of the suite: the owner (a steward), an analyst with a grant, an analyst
without one, another steward and an outsider with no role. ``personas`` gives the people only;
``world`` adds their dataset with a confirmed schema, a budget and a finished release."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import Client

from dpportal.accounts.models import Profile, make_user
from dpportal.api.models import Token
from dpportal.datasets import services as dataset_services
from dpportal.datasets.upload import parse_markers, store_upload
from dpportal.ledger import services as ledger
from dpportal.releases import services as release_services

from tests.data import SMALL_CSV, SMALL_SCHEMA, csv_file

PASSWORD = "correct-horse-battery-9"


@dataclass
class Personas:
    owner: object
    analyst: object
    stranger_analyst: object
    other_steward: object
    outsider: object

    def client(self, user) -> Client:
        c = Client()
        if user is not None:
            c.force_login(user)
        return c

    def api(self, user) -> dict:
        return {"HTTP_AUTHORIZATION": "Token " + Token.issue(user)}


@dataclass
class World(Personas):
    dataset: object
    release: object


def make_personas() -> Personas:
    """The five accounts, all with PASSWORD (a test that logs in through a form types it)."""
    from django.contrib.auth import get_user_model

    return Personas(
        owner=make_user("olivia", PASSWORD, role=Profile.STEWARD),
        analyst=make_user("ana", PASSWORD, role=Profile.ANALYST),
        stranger_analyst=make_user("stan", PASSWORD, role=Profile.ANALYST),
        other_steward=make_user("oscar", PASSWORD, role=Profile.STEWARD),
        outsider=get_user_model().objects.create_user("otto", password=PASSWORD),
    )


def make_dataset(owner, text: str = SMALL_CSV, schema: dict | None = SMALL_SCHEMA, budget=("2", "1e-5")):
    dataset = store_upload(csv_file(text), owner=owner, name="people", markers=parse_markers("?, NA"))
    if schema is not None:
        dataset_services.confirm_schema(dataset, dataset_services.parse_schema_json(schema))
    if budget is not None:
        ledger.set_caps(dataset, epsilon=budget[0], delta=budget[1], user=owner)
    return dataset


def run_release(dataset, user, *, epsilon="0.5", rows=50, mechanism="baseline", params=None):
    """Plan a release and run it in-process (as the workers would: the release, then its utility
    evaluation, which a real deployment runs on the evaluation queue), returning the refreshed row."""
    from dpportal.dashboards.services import evaluate_finished_release

    release = release_services.plan_release(
        dataset,
        user,
        release_services.ReleaseRequest(
            mechanism=mechanism, epsilon=epsilon, delta="0", params=params or {}, rows=rows
        ),
    )
    assert release_services.claim(release.pk)
    release_services.execute(release.pk)
    evaluate_finished_release(release.pk)
    release.refresh_from_db()
    return release


@pytest.fixture
def personas(db) -> Personas:
    return make_personas()


@pytest.fixture
def world(personas) -> World:
    dataset = make_dataset(personas.owner)
    dataset.analysts.add(personas.analyst)
    release = run_release(dataset, personas.owner)
    assert release.status == "done", release.error
    return World(**vars(personas), dataset=dataset, release=release)
