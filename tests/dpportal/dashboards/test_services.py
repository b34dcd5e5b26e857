"""dpportal.dashboards.services: the worker's evaluation entry points."""

from __future__ import annotations

import pandas as pd

from dpportal.dashboards import services
from dpportal.dashboards.models import Evaluation
from mechanisms.source import read_raw_csv


def test_evaluate_release_accepts_frames_held_by_the_caller(world):
    schema = world.release.public_schema()
    prepared_real = world.dataset.source(schema).frame()  # kept columns only, floats
    synthetic = read_raw_csv(world.release.output_path())  # as written (strings, formula guard)
    ev = services.evaluate_release(world.release, real_source_frame=prepared_real, synthetic_frame=synthetic)
    assert ev.status == Evaluation.DONE, ev.error
    assert ev.results["n_real"] == 6 and ev.results["real_rows"] is not None


def test_real_tables_above_the_cap_are_sampled_with_the_fraction_stored(world, monkeypatch):
    monkeypatch.setattr(services, "EVAL_MAX_REAL_ROWS", 3)
    ev = services.evaluate_release(world.release)
    assert ev.status == Evaluation.DONE, ev.error
    note = ev.results["real_rows"]
    assert note["rows_total"] == 6 and note["rows_used"] == ev.results["n_real"] < 6
    assert note["fraction"] == round(note["rows_used"] / 6, 6)


def test_a_deleted_raw_table_skips_the_evaluation(world):
    from django.utils import timezone

    world.dataset.raw_deleted_at = timezone.now()
    world.dataset.save(update_fields=["raw_deleted_at"])
    world.release.refresh_from_db()
    ev = services.evaluate_release(world.release)
    assert ev.status == Evaluation.SKIPPED and "deleted" in ev.error


def test_the_guessed_target_comes_from_the_public_schema_only(world):
    schema = world.release.public_schema()
    assert services.target_for(world.dataset, schema) == "city"  # last categorical column with 2..20 levels
    services.set_target(world.dataset, "age")
    assert services.target_for(world.dataset, schema) == "age"


def test_progress_is_reported_to_the_caller(world):
    seen: list[tuple[float, str]] = []
    services.evaluate_release(world.release, progress=lambda f, s: seen.append((f, s)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(s == "pmse" for _, s in seen)


def test_the_hook_ignores_releases_that_are_not_done(world):
    from dpportal.releases.models import Release

    Release.objects.filter(pk=world.release.pk).update(status=Release.FAILED)
    Evaluation.objects.filter(release=world.release).delete()
    services.evaluate_finished_release(world.release.pk, pd.DataFrame())
    assert not Evaluation.objects.filter(release=world.release).exists()


def test_the_model_target_is_the_releases_own_target_when_it_has_one(world):
    from dpportal.releases.models import Release

    schema = world.release.public_schema()
    assert services.release_target(world.release, schema) == ("city", "guessed (last categorical column)")
    services.set_target(world.dataset, "city")
    Release.objects.filter(pk=world.release.pk).update(params={"workload": "target", "target": "age"})
    world.release.refresh_from_db()
    assert services.release_target(world.release, schema) == ("age", "the release's target")
    ev = services.evaluate_release(world.release)
    assert ev.status == Evaluation.DONE, ev.error
    assert ev.target == "age" and ev.results["target_source"] == "the release's target"
    Release.objects.filter(pk=world.release.pk).update(params={})
    world.release.refresh_from_db()
    assert services.release_target(world.release, schema) == ("city", "steward")
