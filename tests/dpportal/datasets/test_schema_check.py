"""Confirming a schema for a big file: a worker check the page and the API follow (dpportal/datasets/checks.py).

DPPORTAL_SCHEMA_CHECK_INLINE_CELLS=0 makes the small test file "big"; the task runs in-process."""

from __future__ import annotations

import copy
import json
import os
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dpportal.datasets import checks, tasks
from dpportal.datasets.lifecycle import RawDeleteRefused, delete_raw
from dpportal.datasets.models import Dataset, SchemaCheck

from tests.data import SMALL_SCHEMA
from tests.dpportal.datasets.test_schema import _form_for
from tests.personas import make_dataset


@pytest.fixture
def big(world, settings):
    settings.DPPORTAL_SCHEMA_CHECK_INLINE_CELLS = 0
    return make_dataset(world.owner, schema=None, budget=None)


def _put(world, d, schema):
    body = schema if isinstance(schema, str) else json.dumps(schema)
    return world.client(None).put(
        f"/api/datasets/{d.pk}/schema/", body, content_type="application/json", **world.api(world.owner)
    )


def _unfit():
    schema = copy.deepcopy(SMALL_SCHEMA)
    city = next(c for c in schema["columns"] if c["kind"] == "categorical")
    city["categories"] = [c for c in city["categories"] if c != "Nice"]
    city.pop("other", None)
    return schema


def test_the_page_queues_a_check_then_confirms_when_every_record_fits(world, big):
    client = world.client(world.owner)
    resp = client.post(f"/datasets/{big.pk}/schema/", _form_for(big))
    assert resp.status_code == 302 and resp["Location"] == f"/datasets/{big.pk}/schema/check/"
    check = SchemaCheck.objects.get(dataset=big)
    assert check.status == "pending" and Dataset.objects.get(pk=big.pk).schema is None
    page = client.get(resp["Location"]).content.decode()
    assert 'id="progress-box"' in page and "pending" in page
    assert "follow the check" in client.get(f"/datasets/{big.pk}/schema/").content.decode()
    tasks.check_schema_task.apply(args=[check.pk])
    check.refresh_from_db()
    assert (check.status, check.progress, check.stage) == ("done", 1.0, "done: schema confirmed")
    assert Dataset.objects.get(pk=big.pk).confirmed_schema().column("age").upper == 90
    status = client.get(resp["Location"], HTTP_ACCEPT="application/json").json()
    assert status["finished"] and status["schema_confirmed"] and status["progress"] == 100.0
    assert 'id="check-done"' in client.get(resp["Location"]).content.decode()


def test_the_api_answers_202_and_the_check_names_the_problem(world, big):
    resp = _put(world, big, _unfit())
    assert resp.status_code == 202
    check = resp.json()["schema_check"]
    assert check["status"] == "pending" and check["url"] == f"/api/datasets/{big.pk}/schema/check/"
    tasks.check_schema_task.apply(args=[check["id"]])
    got = world.client(None).get(check["url"], **world.api(world.owner)).json()
    assert got["status"] == "failed" and got["finished"] and not got["schema_confirmed"]
    assert "does not fit this schema" in got["error"] and "outside the declared categories" in got["error"]
    assert Dataset.objects.get(pk=big.pk).schema is None
    ds = world.client(None).get(f"/api/datasets/{big.pk}/", **world.api(world.owner)).json()
    assert ds["schema_check"]["status"] == "failed" and not ds["schema_confirmed"]
    # the schema page shows the problem with the values that were sent
    page = world.client(world.owner).get(f"/datasets/{big.pk}/schema/").content.decode()
    assert "The schema was not confirmed: the file does not fit this schema" in page


@pytest.mark.parametrize(
    "body, message",
    [
        ("{not json", "not valid JSON"),
        ({**SMALL_SCHEMA, "columns": SMALL_SCHEMA["columns"][:-1]}, "does not describe column(s)"),
        ({**SMALL_SCHEMA, "columns": [*SMALL_SCHEMA["columns"], {"name": "x", "kind": "excluded"}]}, "not in the file"),
    ],
)
def test_a_schema_refused_without_reading_records_is_a_400_and_queues_nothing(world, big, body, message):
    resp = _put(world, big, body)
    assert resp.status_code == 400 and message in resp.json()["error"]
    assert not SchemaCheck.objects.exists()


def test_a_small_file_is_checked_in_the_request_through_both_doors(world):
    d = make_dataset(world.owner, schema=None, budget=None)
    assert checks.checked_inline(d)
    resp = _put(world, d, _unfit())
    assert resp.status_code == 400 and "does not fit this schema" in resp.json()["error"]
    assert _put(world, d, SMALL_SCHEMA).status_code == 200
    assert Dataset.objects.get(pk=d.pk).schema and not SchemaCheck.objects.exists()


def test_a_newer_confirmation_replaces_a_pending_or_running_check(world, big):
    first = _put(world, big, SMALL_SCHEMA).json()["schema_check"]["id"]
    SchemaCheck.objects.filter(pk=first).update(status="running", started_at=timezone.now())
    second = _put(world, big, _unfit()).json()["schema_check"]["id"]
    assert SchemaCheck.objects.get(pk=first).cancel_requested_at is not None
    third = _put(world, big, _unfit()).json()["schema_check"]["id"]
    assert SchemaCheck.objects.get(pk=second).status == "cancelled"
    tasks.check_schema_task.apply(args=[second])  # a cancelled row is never claimed
    assert SchemaCheck.objects.get(pk=second).status == "cancelled"
    # the replaced running check stops at its next chunk and never confirms
    SchemaCheck.objects.filter(pk=first).update(status="pending")
    tasks.check_schema_task.apply(args=[first])
    assert Dataset.objects.get(pk=big.pk).schema is None
    tasks.check_schema_task.apply(args=[third])
    assert SchemaCheck.objects.get(pk=third).status == "failed"


def test_the_raw_file_is_kept_while_a_check_may_read_it(world, big):
    check = checks.request_confirmation(big, checks.Schema.from_dict(SMALL_SCHEMA))
    with pytest.raises(RawDeleteRefused, match="schema check"):
        delete_raw(big)
    tasks.check_schema_task.apply(args=[check.pk])
    assert delete_raw(big).raw_deleted_at is not None


def test_a_check_whose_worker_vanished_is_failed_by_the_sweep(world, big, settings):
    settings.DPPORTAL_STALE_SECONDS = 60
    check = checks.request_confirmation(big, checks.Schema.from_dict(SMALL_SCHEMA))
    past = timezone.now() - timedelta(seconds=120)
    SchemaCheck.objects.filter(pk=check.pk).update(status="running", started_at=past, heartbeat_at=past)
    assert tasks.check_schema_task.reject_on_worker_lost is False
    call_command("sweep_releases", stdout=open(os.devnull, "w"))
    check.refresh_from_db()
    assert check.status == "failed" and "no heartbeat for 60 s" in check.error and "confirm it again" in check.error
    assert Dataset.objects.get(pk=big.pk).schema is None
    tasks.check_schema_task.apply(args=[check.pk])  # a late delivery does not run a failed check
    assert SchemaCheck.objects.get(pk=check.pk).status == "failed"


def test_a_file_pandas_cannot_read_is_a_400_not_a_500(world, monkeypatch):
    """The file is read as the mechanisms read it (pandas); a parser error there names the problem."""
    import pandas as pd

    from mechanisms.source import TableSource

    def broken(self, size, progress=None):
        raise pd.errors.ParserError("Error tokenizing data. C error: EOF inside string starting at row 5\nmore")

    d = make_dataset(world.owner, schema=None, budget=None)
    monkeypatch.setattr(TableSource, "check", broken)
    resp = _put(world, d, SMALL_SCHEMA)
    assert resp.status_code == 400
    assert resp.json()["error"] == (
        "the file could not be read as CSV: Error tokenizing data. C error: EOF inside string starting at row 5"
    )


def test_the_check_is_sent_by_name_to_the_evaluation_queue(world, big, monkeypatch):
    sent = []
    monkeypatch.setattr(checks.current_app, "send_task", lambda name, **kw: sent.append((name, kw)))
    check = checks.request_confirmation(big, checks.Schema.from_dict(SMALL_SCHEMA))
    checks._queue(check.pk)
    assert sent == [(tasks.check_schema_task.name, {"args": [check.pk], "queue": "evaluation"})]
