"""The release form shows PrivHP's memory estimate before anything is submitted (issue 6)."""

from __future__ import annotations

from dpportal.releases.models import Release
from mechanisms.privhp import PrivHP


def test_privhp_form_shows_the_memory_estimate_and_updates_it_without_queueing(world):
    client = world.client(world.owner)
    before = Release.objects.count()
    url = f"/datasets/{world.dataset.pk}/releases/new/"
    page = client.get(url, {"mechanism": "privhp"}).content.decode()
    assert "Memory the structure will use" in page
    expected = PrivHP.memory_estimate(world.dataset.confirmed_schema(), world.dataset.n_rows, {}, epsilon=1.0)
    assert f"{round(expected / 2**20, 2)} MiB" in page
    big = client.get(url, {"mechanism": "privhp", "estimate": "1", "epsilon": "1",
                           "param_memory_mb": "64"}).content.decode()
    assert "Memory the structure will use" in big
    bad = client.get(url, {"mechanism": "privhp", "estimate": "1", "epsilon": "-1"}).content.decode()
    assert "epsilon must be positive" in bad
    assert Release.objects.count() == before  # estimating queues nothing


def test_release_form_warns_when_pmse_gets_more_columns_than_it_can_use(world):
    """pMSE's advice (docs/benchmarks.md, finding 7) appears for a 4-numeric-column schema and not for 2;
    it refuses nothing and reserves nothing."""
    from tests.web.personas import make_dataset

    cols = ["a", "b", "c", "d"]
    text = ",".join(cols) + "\n" + "\n".join(",".join(str((i * (j + 3)) % 50) for j in range(4)) for i in range(60))
    wide = {"missing_markers": [""], "columns": [
        {"name": c, "kind": "continuous", "lower": 0, "upper": 50, "bins": 5, "fill": 0} for c in cols]}
    narrow = {"missing_markers": [""], "columns": wide["columns"][:2] + [
        {"name": c, "kind": "excluded"} for c in cols[2:]]}
    client = world.client(world.owner)
    before = Release.objects.count()
    pages = {}
    for label, schema in (("wide", wide), ("narrow", narrow)):
        ds = make_dataset(world.owner, text=text, schema=schema)
        pages[label] = client.get(f"/datasets/{ds.pk}/releases/new/", {"mechanism": "pmse"}).content.decode()
    assert "This schema keeps 4 numeric columns. pMSE is built for two or three" in pages["wide"]
    assert 'id="submit-release"' in pages["wide"]  # advice only: the release can still be submitted
    assert "pMSE is built for two or three" not in pages["narrow"]
    base = client.get(f"/datasets/{ds.pk}/releases/new/", {"mechanism": "baseline"}).content.decode()
    assert "mechanism-advice" not in base
    assert Release.objects.count() == before
