"""The release form shows PrivHP's memory estimate before anything is submitted."""

from __future__ import annotations

from dpportal.releases.models import Release
from mechanisms.synthesizers.privhp import PrivHP


def test_privhp_form_shows_the_memory_estimate_and_updates_it_without_queueing(world):
    client = world.client(world.owner)
    before = Release.objects.count()
    url = f"/datasets/{world.dataset.pk}/releases/new/"
    page = client.get(url, {"mechanism": "privhp"}).content.decode()
    assert "Memory the release will use" in page
    expected = PrivHP.memory_estimate(world.dataset.confirmed_schema(), world.dataset.n_rows, {}, epsilon=1.0)
    assert f"{round(expected / 2**20, 2)} MiB" in page
    big = client.post(
        url, {"mechanism": "privhp", "estimate": "1", "epsilon": "1", "rows": "10", "param_memory_mb": "64"}
    ).content.decode()
    assert "Memory the release will use" in big
    bad = client.post(url, {"mechanism": "privhp", "estimate": "1", "epsilon": "-1"}).content.decode()
    assert "epsilon must be positive" in bad
    assert Release.objects.count() == before  # estimating queues nothing


def test_the_update_button_posts_so_the_csrf_token_never_goes_into_the_url(world):
    page = (
        world.client(world.owner)
        .get(f"/datasets/{world.dataset.pk}/releases/new/", {"mechanism": "privhp"})
        .content.decode()
    )
    form = page[page.index('id="release-form"') - 40 : page.index("</form>", page.index('id="release-form"'))]
    assert 'method="post"' in form and 'id="estimate-memory"' in form
    assert "formmethod" not in form  # a GET button would put csrfmiddlewaretoken and every value in the URL


def test_the_estimate_names_its_parts_so_the_fixed_chunk_memory_is_explained(world):
    """memory_mb 8 vs 1 differ by the structure only; the chunk being read is the same in both and
    is what dominates a small budget (the "8 MB -> 30 MiB, 1 MB -> 23 MiB" surprise)."""
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/"
    schema, n = world.dataset.confirmed_schema(), world.dataset.n_rows
    parts = {}
    for mb in ("8", "1"):
        page = client.post(
            url, {"mechanism": "privhp", "estimate": "1", "epsilon": "1", "param_memory_mb": mb}
        ).content.decode()
        assert "one chunk of rows being read" in page and "not by memory_mb" in page
        plan = PrivHP.plan_for(schema, n, 1.0, {"memory_mb": mb})
        parts[mb] = plan.memory_bytes(len(schema.kept))
        assert f"{round(parts[mb]['chunk'] / 2**20, 2)} MiB: one chunk" in page
    assert parts["8"]["chunk"] == parts["1"]["chunk"]


def test_updating_the_estimate_keeps_the_typed_values_and_shows_no_errors_yet(world):
    page = (
        world.client(world.owner)
        .post(
            f"/datasets/{world.dataset.pk}/releases/new/",
            {"mechanism": "privhp", "estimate": "1", "epsilon": "", "param_memory_mb": "3.5"},
        )
        .content.decode()
    )
    assert 'name="param_memory_mb" value="3.5"' in page and "This field is required" not in page
