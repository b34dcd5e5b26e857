"""The schema page for wide tables: a count of columns still to review, bulk
actions that edit the working values without saving, and rounded suggestions."""

from __future__ import annotations

from dpportal.datasets.models import Dataset

from tests.personas import make_dataset

WIDE = "id,q1,q2,q3,age,score_a,score_b\n" + "".join(
    f"{i},{i % 5},{(i * 3) % 5},{(i * 7) % 5},{17 + (i * 13) % 74},{(i * 37) % 1000 / 10},{(i * 11) % 997 / 10}\n"
    for i in range(60)
)


def _page(world, d, data=None):
    client = world.client(world.owner)
    url = f"/datasets/{d.pk}/schema/"
    return (client.post(url, data) if data is not None else client.get(url)).content.decode()


def _post_from_page(d, overrides=None):
    """What the browser posts for the untouched page: the suggestions, no ticks."""
    post = {"markers": "", "empty_is_missing": "1"}
    for i, col in enumerate(d.schema_draft["columns"]):
        post[f"col-{i}-kind"] = col["kind"]
        for f in ("lower", "upper", "bins", "fill", "other"):
            if col.get(f) is not None:
                post[f"col-{i}-{f}"] = str(col[f])
        post[f"col-{i}-categories"] = "\n".join(col.get("categories", []))
    post.update(overrides or {})
    return post


def test_the_page_counts_the_columns_not_yet_reviewed(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    page = _page(world, d)
    assert '<span class="review-left">7</span> of 7 kept columns not yet ticked as reviewed' in page
    post = _post_from_page(d, {"col-0-ok": "1", "col-4-ok": "1", "bulk": "review", "bulk_kind": "categorical"})
    page = _page(world, d, post)  # two ticked by hand; no categorical column to tick
    assert (
        '<span class="review-left">5</span> of 7 kept columns not yet ticked as reviewed (q1, q2, q3, score_a, '
        "score_b)" in page
    )


def test_tick_every_column_of_a_kind_at_once_without_saving(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    kinds = {c["name"]: c["kind"] for c in d.schema_draft["columns"]}
    n_int = sum(1 for k in kinds.values() if k == "integer")
    page = _page(world, d, _post_from_page(d, {"bulk": "review", "bulk_kind": "integer", "col-1-lower": "-3"}))
    assert f"Ticked {n_int} integer column(s) as reviewed" in page and "Nothing is saved" in page
    assert f'<span class="review-left">{7 - n_int}</span>' in page
    assert 'name="col-1-lower" value="-3"' in page  # the values typed on the page are kept
    assert Dataset.objects.get(pk=d.pk).schema is None
    page = _page(world, d, _post_from_page(d, {"bulk": "review", "bulk_kind": "all"}))
    assert "All 7 kept columns ticked as reviewed." in page


def test_set_kinds_by_name_pattern(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    page = _page(world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": "Q*", "bulk_set_kind": "categorical"}))
    assert "Set kind categorical on 3 column(s) matching &#x27;Q*&#x27;: q1, q2, q3" in page
    for i in (1, 2, 3):
        select = page[page.index(f'name="col-{i}-kind"') :]
        assert '<option value="categorical" selected>' in select[: select.index("</select>")]
    assert 'name="col-1-categories" rows="2" cols="24">0\n1\n2\n3\n4\n</textarea>' in page  # codes 0-4
    page = _page(world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": "id", "bulk_set_kind": "excluded"}))
    assert "Set kind excluded on 1 column(s)" in page and '<span class="review-left">7</span>' not in page


def test_a_pattern_that_matches_nothing_is_named(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    page = _page(world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": "zz*", "bulk_set_kind": "integer"}))
    assert "no column name matches the pattern &#x27;zz*&#x27;" in page


def test_bulk_set_numeric_kind_takes_the_suggested_bounds(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    age = next(c for c in d.schema_draft["columns"] if c["name"] == "age")
    assert (age["lower"], age["upper"]) == (17, 90)  # data 17..90: the data's minimum and maximum
    page = _page(world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": "age", "bulk_set_kind": "continuous"}))
    assert 'name="col-4-lower" value="17' in page and 'name="col-4-upper" value="90' in page


def test_confirming_still_needs_only_the_acknowledgement(world):
    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    resp = world.client(world.owner).post(f"/datasets/{d.pk}/schema/", _post_from_page(d, {"public_ack": "1"}))
    assert resp.status_code == 302 and Dataset.objects.get(pk=d.pk).schema is not None


def test_glob_match_agrees_with_fnmatch_on_stars_and_question_marks():
    import fnmatch
    import itertools

    from dpportal.datasets.services import glob_match

    names = ["", "a", "ab", "abc", "a*bc", "q1", "score_a", "x_id", "aaa", "a?c"]
    patterns = ["", "*", "?", "a*", "*c", "a?c", "*_id", "a*b*c", "**", "*a*a*", "?*?", "q?", "a*bc*"]
    for name, pattern in itertools.product(names, patterns):
        assert glob_match(name, pattern) == fnmatch.fnmatchcase(name, pattern.replace("[", "[[]")), (name, pattern)
    assert glob_match("a[b]", "a[b]") and not glob_match("ab", "a[b]")  # brackets are literal characters


def test_a_hostile_pattern_is_answered_at_once(world):
    import time

    d = make_dataset(world.owner, text=WIDE, schema=None, budget=None)
    started = time.perf_counter()
    page = _page(
        world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": "[" * 20_000, "bulk_set_kind": "integer"})
    )
    assert "a column name pattern may be at most 200 characters, got 20000" in page
    worst = "*a" * 99  # with "b": 199 characters, the bounded matcher's worst case
    page = _page(
        world, d, _post_from_page(d, {"bulk": "kind", "bulk_pattern": worst + "b", "bulk_set_kind": "integer"})
    )
    assert "no column name matches the pattern" in page
    assert time.perf_counter() - started < 5
    assert Dataset.objects.get(pk=d.pk).schema is None


def test_bounded_matcher_is_fast_on_long_names():
    import time

    from dpportal.datasets.services import glob_match

    started = time.perf_counter()
    assert not glob_match("a" * 1000, "*a" * 99 + "b")
    assert time.perf_counter() - started < 1
