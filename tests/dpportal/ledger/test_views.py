"""Ledger review pages: the steward sees the budget panel, the sortable ledger and the exports;
analysts (even granted ones), other stewards and outsiders get 404."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from dpportal.ledger import services
from dpportal.ledger.models import LedgerEntry

pytestmark = pytest.mark.django_db

PAGES = ["dpportal-ledger", "dpportal-ledger-csv", "dpportal-ledger-json", "dpportal-api-ledger"]


@pytest.fixture
def ledger(budget, personas, make_release):
    user = personas.owner
    for eps in ("0.1", "1/3"):
        r = make_release(epsilon=eps)
        services.reserve(dataset=budget, release=r, user=user, epsilon=eps, delta="0")
        services.settle(r)
    pending = make_release(epsilon="0.2")
    services.reserve(dataset=budget, release=pending, user=user, epsilon="0.2", delta="0")
    return budget


def login(client, user):
    """Session login for the pages, plus an API token header for /api/ URLs."""
    from dpportal.api.models import Token

    client.force_login(user)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.issue(user)}"
    return client


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("who", ["analyst", "other_steward"])
def test_ledger_and_exports_are_404_for_anyone_but_the_steward(client, ledger, personas, page, who):
    login(client, getattr(personas, who))
    assert client.get(reverse(page, args=[ledger.pk])).status_code == 404


@pytest.mark.parametrize("page", PAGES[:3])
def test_anonymous_is_sent_to_login(client, ledger, page):
    response = client.get(reverse(page, args=[ledger.pk]))
    assert response.status_code == 302 and "login" in response["Location"]


def test_unknown_dataset_is_404_too(client, personas):
    login(client, personas.owner)
    assert client.get(reverse("dpportal-ledger", args=[999999])).status_code == 404


def test_steward_sees_ledger_with_chain_status_and_links(client, ledger, personas):
    login(client, personas.owner)
    html = client.get(reverse("dpportal-ledger", args=[ledger.pk])).content.decode()
    assert "intact: 6 entries" in html
    assert "vendor/plotly.min.js" in html and "ledger/timeline.js" in html and "cdn" not in html.lower()
    assert "1/3" in html and "reserved (running or queued)" in html
    release_pk = LedgerEntry.objects.filter(kind="reserve").first().release_pk
    assert reverse("dpportal-release", args=[release_pk]) in html


def test_ledger_table_sorts_by_whitelisted_columns(client, ledger, personas):
    login(client, personas.owner)
    html = client.get(reverse("dpportal-ledger", args=[ledger.pk]) + "?sort=epsilon&dir=desc").content.decode()
    assert 'aria-sort="descending"' in html
    assert html.index(">1/3<") < html.index(">0.2<") < html.index(">0.1<")
    # an unknown column falls back to the sequence number instead of reaching the ORM
    ok = client.get(reverse("dpportal-ledger", args=[ledger.pk]) + "?sort=hash__startswith")
    assert ok.status_code == 200


def test_broken_chain_shows_on_the_page(client, ledger, personas):
    LedgerEntry.objects.filter(dataset=ledger, seq=3).update(eps_units=1)
    login(client, personas.owner)
    html = client.get(reverse("dpportal-ledger", args=[ledger.pk])).content.decode()
    assert "BROKEN" in html and "entry #3: content does not match its hash" in html


def test_exports_download_for_the_steward(client, ledger, personas):
    login(client, personas.owner)
    response = client.get(reverse("dpportal-ledger-csv", args=[ledger.pk]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["kind"] for r in rows] == ["cap", "reserve", "spend", "reserve", "spend", "reserve"]
    data = client.get(reverse("dpportal-ledger-json", args=[ledger.pk])).json()
    assert data["chain"]["ok"] and data["budget"]["epsilon"]["reserved"] == "0.2"
    assert [e["hash"] for e in data["entries"]] == [r["hash"] for r in rows]
    api = client.get(reverse("dpportal-api-ledger", args=[ledger.pk])).json()
    assert api["entries"] == data["entries"]


def test_budget_panel_tag_renders_gauge_and_timeline(ledger):
    from django.template import Context, Template

    html = Template("{% load ledger_tags %}{% budget_panel dataset %}|{% remaining_budget dataset %}").render(
        Context({"dataset": ledger})
    )
    assert 'aria-label="epsilon: spent 13/30, reserved 0.2, remaining 11/30 of cap 1"' in html
    assert 'id="ledger-timeline-%d-data"' % ledger.pk in html
    assert html.endswith("|epsilon 11/30 of 1 left; delta 1e-5 of 1e-5 left")


def test_dataset_page_shows_the_budget_panel_to_the_steward_only(client, ledger, personas):
    url = reverse("dpportal-dataset", args=[ledger.pk])
    html = login(client, personas.owner).get(url).content.decode()
    assert 'aria-label="epsilon: spent 13/30' in html and reverse("dpportal-ledger", args=[ledger.pk]) in html
    assert 'class="ledger-timeline"' in html
    client.logout()
    seen = login(client, personas.analyst).get(url)
    assert seen.status_code == 200  # granted analysts see the dataset's finished releases ...
    page = seen.content.decode()
    assert "epsilon: spent" not in page and "/ledger/" not in page  # ... but not its budget or ledger


def test_dataset_list_shows_remaining_budget(client, ledger, personas):
    html = login(client, personas.owner).get(reverse("dpportal-datasets")).content.decode()
    assert "epsilon 11/30 of 1 left" in html
