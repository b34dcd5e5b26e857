"""Quality at a glance: one score per release for the steward, beside the dashboard;
the dataset pages compare releases by it; the compare page marks the better value."""

from __future__ import annotations

from django.urls import reverse

from dpportal.dashboards.models import Evaluation
from dpportal.dashboards.views import better_side, compare_metrics
from tests.data import LABELLED_SCHEMA, labelled_people
from tests.personas import make_dataset, run_release


def _quality(release):
    return Evaluation.objects.get(release=release).results["quality"]


def test_the_release_page_shows_the_score_to_the_steward_only(world):
    q = _quality(world.release)  # an unseeded release of 6 rows: its score can be 0 by chance (seen once)
    assert 0 <= q["score"] <= 1 and q["score"] == (q["column_shapes"] + q["column_pair_trends"]) / 2
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert 'id="quality-score"' in page and f"{100 * q['score']:.1f}%" in page
    analyst = world.client(world.analyst).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert "quality-score" not in analyst and "quality" not in analyst.lower()


def test_an_evaluation_from_before_the_score_says_to_re_evaluate(world):
    ev = Evaluation.objects.get(release=world.release)
    ev.results.pop("quality")
    ev.save()
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert "Quality score: not available yet" in page


def test_the_dataset_pages_mark_the_best_release_by_quality(world):
    worse = run_release(world.dataset, world.owner, epsilon="0.01", rows=50)
    scores = {r.pk: _quality(r)["score"] for r in (world.release, worse)}
    best = max(scores, key=scores.get)
    for name in ("dpportal-dataset", "dpportal-dataset-dashboard"):
        page = world.client(world.owner).get(reverse(name, args=[world.dataset.pk])).content.decode()
        assert page.count(">best</span>") == 1, name
        row = page[page.index(f"/releases/{best}/") :]
        row = row[: row.index("</tr>")]
        assert ">best</span>" in row, name
    analyst = world.client(world.analyst).get(reverse("dpportal-dataset", args=[world.dataset.pk])).content.decode()
    assert "Quality" not in analyst and ">best</span>" not in analyst


def test_better_side_follows_each_metrics_direction():
    assert better_side("Quality score", 0.9, 0.8) == "a"
    assert better_side("TSTR roc_auc (mean of 12 models)", 0.6, 0.7) == "b"
    assert better_side("1-way TVD (mean)", 0.1, 0.2) == "a"
    assert better_side("pMSE (cart)", 0.2, 0.1) == "b"
    assert better_side("1-way TVD (mean)", 0.1, 0.1) == "" and better_side("1-way TVD (mean)", None, 0.1) == ""
    assert better_side("something new", 1, 2) == ""


def test_compare_rows_keep_metrics_missing_on_one_side():
    rows = compare_metrics(
        [{"metric": "Quality score", "value": 0.8, "reading": "a"}],
        [
            {"metric": "Quality score", "value": 0.9, "reading": "b"},
            {"metric": "TSTR macro_f1 (mean of 12 models)", "value": 0.5, "reading": "t"},
        ],
    )
    assert [(r["metric"], r["better"]) for r in rows] == [
        ("Quality score", "b"),
        ("TSTR macro_f1 (mean of 12 models)", ""),
    ]


def test_the_compare_page_marks_the_better_value(world):
    other = run_release(world.dataset, world.owner, epsilon="0.01", rows=50)
    url = reverse("dpportal-release-compare", args=[world.dataset.pk]) + f"?a={world.release.pk}&b={other.pk}"
    page = world.client(world.owner).get(url).content.decode()
    qa, qb = _quality(world.release)["score"], _quality(other)["score"]
    row = page[page.index("<th>Quality score</th>") :]
    row = row[: row.index("</tr>")]
    cells = row.split("<td")[1:]
    assert ("better" in cells[0]) == (qa > qb) and ("better" in cells[1]) == (qb > qa)
    assert "✓ marks the better value" in page


def test_the_headline_is_scored_on_the_downloaded_file_and_names_the_worst_column(world):
    results = Evaluation.objects.get(release=world.release).results
    q = results["quality"]
    assert q["basis"] == "the downloaded file at full resolution" and "file_checks" in results
    assert q["score"] == (q["column_shapes"] + q["column_pair_trends"]) / 2 and 0 < q["floor_score"] <= 1
    assert results["quality_cells"]["score"] is not None  # the internal-cell score is kept beside it
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert 'id="quality-worst"' in page and q["worst_column"] in page


def test_a_column_far_off_turns_the_score_red(world):
    ev = Evaluation.objects.get(release=world.release)
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert ("quality far-off" in page) == ev.results["quality"]["far_off"]
    ev.results["quality"].update(far_off=True, worst_column_far_off=True)
    ev.save()
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert 'class="quality far-off"' in page and "far off, check it before analysts use it" in page


def test_a_file_that_loses_the_label_is_red_with_the_reason_on_the_page_and_in_the_api(personas):
    """The baseline draws every column on its own: each column's shares survive, how income depends on
    education does not, and the headline says so whatever its 1-way score."""
    dataset = make_dataset(
        personas.owner, text=labelled_people(4000, seed=1).to_csv(index=False), schema=LABELLED_SCHEMA
    )
    release = run_release(dataset, personas.owner, epsilon="2", rows=2000)
    q = _quality(release)
    assert q["far_off"] and not q["worst_column_far_off"]
    assert q["label_gap"]["column"] == "education" and q["label_gap"]["far_off"]
    assert q["models"]["target"] == "income" and q["models"]["real"] > 0.8  # the TSTR section reached the headline
    assert any(w.startswith("The file loses how income depends on education") for w in q["warnings"])
    page = personas.client(personas.owner).get(reverse("dpportal-release", args=[release.pk])).content.decode()
    assert 'class="quality far-off"' in page and '<ul class="error" id="quality-warnings">' in page
    assert all(f"<li>{w}</li>" in page for w in q["warnings"])
    for part in ("quality-worst-pair", "quality-label-gap", "quality-models"):
        assert f'id="{part}"' in page
    api = personas.client(None).get(f"/api/releases/{release.pk}/", **personas.api(personas.owner)).json()
    assert api["quality"]["warnings"] == q["warnings"] and api["quality"]["label_gap"]["column"] == "education"
    assert {"worst_pair", "models", "models_near_chance"} <= set(api["quality"])


def test_an_evaluation_from_before_the_relationship_checks_still_renders(world):
    ev = Evaluation.objects.get(release=world.release)
    old = {k: ev.results["quality"][k] for k in ("score", "column_shapes", "column_pair_trends", "floor_score")}
    ev.results["quality"] = {**old, "worst_column": "age", "worst_tvd": 0.4, "worst_floor": 0.1, "far_off": True}
    ev.save()
    page = world.client(world.owner).get(reverse("dpportal-release", args=[world.release.pk])).content.decode()
    assert 'class="quality far-off"' in page and "far off, check it before analysts use it" in page
    assert "quality-warnings" not in page and "quality-label-gap" not in page
    api = world.client(None).get(f"/api/releases/{world.release.pk}/", **world.api(world.owner)).json()
    assert api["quality"]["warnings"] is None and api["quality"]["worst_column_far_off"] is True
