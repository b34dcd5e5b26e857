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

