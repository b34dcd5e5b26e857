"""Release / dataset dashboards and the compare view: steward-only, with the not-private note."""

from __future__ import annotations

import json
import os

import pytest
from django.urls import reverse

from dpportal.dashboards.models import Evaluation
from tests.personas import run_release


def urls(world) -> list[str]:
    r, d = world.release.pk, world.dataset.pk
    return [
        reverse("dpportal-release-dashboard", args=[r]),
        reverse("dpportal-evaluation-status", args=[r]),
        reverse("dpportal-dataset-dashboard", args=[d]),
        reverse("dpportal-release-compare", args=[d]) + f"?a={r}&b={r}",
    ]


def test_the_worker_stores_an_evaluation_after_the_release(world):
    ev = Evaluation.objects.get(release=world.release)
    assert ev.status == Evaluation.DONE, ev.error
    assert ev.results["n_real"] == 6 and ev.results["n_synthetic"] == 50
    assert {"columns", "pairs", "correlation", "pmse", "mmd", "privacy", "readings", "summary"} <= set(ev.results)


def test_the_owner_sees_the_dashboards_with_the_not_private_note(world):
    c = world.client(world.owner)
    for url in urls(world):
        resp = c.get(url)
        assert resp.status_code == 200, url
        if "json" not in url:
            assert b"not privacy-protected" in resp.content
    page = c.get(urls(world)[0]).content.decode()
    assert 'class="dash-chart' in page and "vendor/plotly-cartesian.min.js" in page
    assert "//cdn" not in page and "https://" not in page


def test_the_pages_only_render_what_the_worker_stored(world, monkeypatch):
    """No metric is computed and no table read while a dashboard page is asked for: the evaluation's results
    are the worker's (a page that computed or read them would raise here)."""
    import mechanisms.source
    from mechanisms.evaluation import fidelity, utility

    def refuse(*a, **kw):
        raise AssertionError("a dashboard page computed a metric or read a table")

    for module, name in ((utility, "evaluate"), (fidelity, "report"), (mechanisms.source, "read_raw_csv")):
        monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(mechanisms.source.TableSource, "frame", refuse)
    monkeypatch.setattr(mechanisms.source.TableSource, "chunks", refuse)
    c = world.client(world.owner)
    for url in urls(world):
        assert c.get(url).status_code == 200, url


@pytest.mark.parametrize("who", ["analyst", "stranger_analyst", "other_steward", "outsider"])
def test_everyone_but_the_owner_gets_404(world, who):
    c = world.client(getattr(world, who))
    for url in urls(world):
        assert c.get(url).status_code == 404, (who, url)
    evaluate = reverse("dpportal-release-evaluate", args=[world.release.pk])
    target = reverse("dpportal-dataset-target", args=[world.dataset.pk])
    assert c.post(evaluate).status_code == 404
    assert c.post(target, {"target": "city"}).status_code == 404


def test_anonymous_visitors_are_sent_to_login(world):
    c = world.client(None)
    for url in urls(world):
        assert c.get(url).status_code in (302, 404)


def test_downloads_carry_no_evaluation(world):
    c = world.client(world.analyst)
    manifest = c.get(reverse("dpportal-release-manifest", args=[world.release.pk]))
    assert manifest.status_code == 200
    text = manifest.content.decode()
    for word in ("tvd", "pmse", "wasserstein", "evaluation", "dcr"):
        assert word not in text.lower()
    owner_manifest = world.client(world.owner).get(reverse("dpportal-release-manifest", args=[world.release.pk]))
    assert "pmse" not in owner_manifest.content.decode().lower()


def test_a_failing_evaluation_does_not_fail_the_release(world, monkeypatch):
    from mechanisms.evaluation import utility

    def boom(*a, **kw):
        raise RuntimeError("metric exploded")

    monkeypatch.setattr(utility, "evaluate", boom)
    release = run_release(world.dataset, world.owner, epsilon="0.25")
    assert release.status == "done"
    ev = Evaluation.objects.get(release=release)
    assert ev.status == Evaluation.FAILED and "metric exploded" in ev.error
    page = world.client(world.owner).get(reverse("dpportal-release-dashboard", args=[release.pk])).content.decode()
    assert "Evaluation failed" in page


def test_the_steward_sets_a_target_and_reevaluates(world, django_capture_on_commit_callbacks, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    c = world.client(world.owner)
    resp = c.post(reverse("dpportal-dataset-target", args=[world.dataset.pk]), {"target": "age"})
    assert resp.status_code == 302
    with django_capture_on_commit_callbacks(execute=True):
        c.post(reverse("dpportal-release-evaluate", args=[world.release.pk]))
    ev = Evaluation.objects.get(release=world.release)
    assert ev.status == Evaluation.DONE and ev.target == "age"
    assert ev.results["target_source"] == "steward"
    assert ev.results["ml"] is None and "at least 100 real rows" in ev.results["ml_skipped"]  # 6 rows only


def test_a_bad_target_is_refused_with_its_name(world):
    c = world.client(world.owner)
    resp = c.post(reverse("dpportal-dataset-target", args=[world.dataset.pk]), {"target": "note"}, follow=True)
    assert "target=&#x27;note&#x27;" in resp.content.decode()


def test_utility_vs_epsilon_has_one_line_per_mechanism(world):
    run_release(world.dataset, world.owner, epsilon="0.25")
    page = world.client(world.owner).get(reverse("dpportal-dataset-dashboard", args=[world.dataset.pk]))
    fig = json.loads(
        page.content.decode().split('id="util-tvd_1way_mean-data" type="application/json">')[1].split("</script>")[0]
    )
    assert {t["name"] for t in fig["data"]} == {"baseline"} and sorted(fig["data"][0]["x"]) == [0.25, 0.5]


def test_compare_shows_both_releases(world):
    other = run_release(world.dataset, world.owner, epsilon="0.25")
    url = reverse("dpportal-release-compare", args=[world.dataset.pk]) + f"?a={world.release.pk}&b={other.pk}"
    page = world.client(world.owner).get(url).content.decode()
    assert f"release {other.pk}" in page and "cmp-0" in page


def test_an_evaluation_whose_worker_died_shows_as_failed_once_swept(world, settings):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    started = timezone.now() - timedelta(seconds=settings.DPPORTAL_STALE_SECONDS + 60)
    Evaluation.objects.filter(release=world.release).update(status=Evaluation.RUNNING, started_at=started)
    call_command("sweep_releases", stdout=open(os.devnull, "w"))
    page = world.client(world.owner).get(reverse("dpportal-release-dashboard", args=[world.release.pk]))
    assert "Evaluation failed: the worker running this job stopped without a trace" in page.content.decode()
    status = world.client(world.owner).get(reverse("dpportal-evaluation-status", args=[world.release.pk])).json()
    assert status["status"] == "failed" and status["finished"] is True


def test_compare_defaults_to_finished_releases_never_a_cancelled_one(world):
    import re

    from dpportal.releases import services as release_services

    other = run_release(world.dataset, world.owner, epsilon="0.25")
    cancelled = release_services.plan_release(
        world.dataset,
        world.owner,
        release_services.ReleaseRequest(mechanism="baseline", epsilon="0.1", delta="0", params={}, rows=5),
    )
    release_services.cancel(cancelled)  # the newest release: first in the list
    page = (
        world.client(world.owner).get(reverse("dpportal-dataset-dashboard", args=[world.dataset.pk])).content.decode()
    )
    checked = dict(re.findall(r'name="([ab])" value="(\d+)" checked', page))
    assert checked == {"a": str(other.pk), "b": str(world.release.pk)}


def test_the_dataset_pages_read_each_evaluation_s_summary_not_its_results(world):
    """The release list shows each evaluation's summary, quality and risk bound as the database extracts them:
    as many queries for three releases as for one (a deferred ``results`` read per row would add one each),
    and the figures are the stored ones."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from dpportal.dashboards.templatetags.dashboard_tags import pct

    c = world.client(world.owner)
    pages = [reverse("dpportal-dataset-dashboard", args=[world.dataset.pk]), f"/datasets/{world.dataset.pk}/"]

    def count(url) -> int:
        with CaptureQueriesContext(connection) as q:
            assert c.get(url).status_code == 200
        return len(q)

    one = [count(url) for url in pages]
    run_release(world.dataset, world.owner, epsilon="0.25")
    run_release(world.dataset, world.owner, epsilon="0.25")
    assert [count(url) for url in pages] == one
    summary = Evaluation.objects.get(release=world.release).results["summary"]
    page = c.get(pages[0]).content.decode()
    assert f"<td>{pct(summary['tvd_1way_mean'])}</td><td>{pct(summary['tvd_2way_mean'])}</td>" in page
