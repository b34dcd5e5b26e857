"""The release form is generated from each mechanism's ParamSpec list and validates through it."""

from __future__ import annotations

import pytest

from dpportal.releases.models import Release
from mechanisms import registry

from tests.data import SMALL_SCHEMA


def _supported():
    from mechanisms.schema import Schema

    return registry.supporting(Schema.from_dict(SMALL_SCHEMA))


def _defaults(cls) -> dict:
    """What the browser submits for an untouched form."""
    post = {
        "mechanism": cls.name,
        "epsilon": "0.2",
        "delta": "1e-7" if cls.needs_delta else "0",
        "rows": "20",
        "confirm_would_fail": "on",  # ignored unless the mechanism is predicted to fail (then it is required)
        "confirm_high_error": "on",
    }  # likewise above the predicted-error threshold (6 rows: density-lp at 0.2)
    for spec in cls.params:
        if spec.type == "bool":
            if spec.default:
                post[f"param_{spec.name}"] = "on"
        elif spec.default is not None:
            post[f"param_{spec.name}"] = str(spec.default)
    return post


def test_unsupported_mechanisms_are_listed_but_not_offered(world):
    page = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/releases/new/").content.decode()
    for name in registry.names():
        if name not in _supported():
            assert f'value="{name}" disabled' in page, name


def test_an_unsupported_mechanism_says_which_column_kinds_to_exclude(world):
    from mechanisms.schema import Schema

    kinds = Schema.from_dict(SMALL_SCHEMA).kinds
    refused = [n for n in registry.names() if kinds - registry.get(n).supported_kinds]
    if not refused:
        pytest.skip("every mechanism supports the test schema")
    name = refused[0]
    missing = " and ".join(sorted(kinds - registry.get(name).supported_kinds))
    client = world.client(world.owner)
    page = client.get(f"/datasets/{world.dataset.pk}/releases/new/?mechanism={name}").content.decode()
    assert f"{name} does not support {missing} columns: mark them excluded in the schema" in page
    assert "(does not support " in page and "this schema)" not in page.split("<select", 1)[1].split("</select>")[0]
    before = Release.objects.count()
    post = client.post(
        f"/datasets/{world.dataset.pk}/releases/new/", {"mechanism": name, "epsilon": "0.1", "rows": "5"}
    )
    assert f"{name} does not support {missing} columns" in post.content.decode()
    assert Release.objects.count() == before  # nothing planned, nothing charged


@pytest.mark.parametrize("name", _supported())
def test_each_supported_mechanism_gets_its_form_and_defaults_validate(world, name):
    cls = registry.get(name)
    client = world.client(world.owner)
    url = f"/datasets/{world.dataset.pk}/releases/new/?mechanism={name}"
    page = client.get(url).content.decode()
    for spec in cls.params:
        assert f'name="param_{spec.name}"' in page, spec.name
    resp = client.post(url, _defaults(cls))
    assert resp.status_code == 302, resp.content.decode().split("<main>")[1][:1500]
    release = Release.objects.latest("pk")
    assert release.mechanism == name and release.status == "queued"


def test_a_parameter_out_of_range_is_named(world):
    cls = next(
        (
            registry.get(n)
            for n in _supported()
            if any(p.type == "int" and p.minimum is not None for p in registry.get(n).params)
        ),
        None,
    )
    if cls is None:
        pytest.skip("no supported mechanism has a bounded integer parameter")
    spec = next(p for p in cls.params if p.type == "int" and p.minimum is not None)
    post = {**_defaults(cls), f"param_{spec.name}": str(int(spec.minimum) - 1)}
    resp = world.client(world.owner).post(f"/datasets/{world.dataset.pk}/releases/new/?mechanism={cls.name}", post)
    text = resp.content.decode()
    assert resp.status_code == 200 and (spec.name in text), text.split("<main>")[1][:1500]
    assert f"parameter &#x27;{spec.name}&#x27; must be &gt;= {spec.minimum}" in text
    assert "must be" in text or "greater than" in text
    assert Release.objects.count() == 1


def test_dpmerf_prefills_a_usable_delta_and_offers_only_categorical_targets(world):
    page = (
        world.client(world.owner)
        .get(f"/datasets/{world.dataset.pk}/releases/new/", {"mechanism": "dpmerf"})
        .content.decode()
    )
    import re

    n = world.dataset.n_rows  # 6 rows: 1/(10 n) = 1/60 -> 1e-2, unless the budget has less delta left
    prefilled = float(re.search(r'name="delta" value="([^"]+)"', page).group(1))
    from dpportal.ledger.services import remaining

    left = remaining(world.dataset)["delta"]["remaining"]
    assert n == 6 and 0 < prefilled <= 1e-2
    assert prefilled <= float(left)  # a pre-filled delta the ledger would refuse is no help
    target = page[page.index('name="param_target"') : page.index("</select>", page.index('name="param_target"'))]
    assert '<option value="city">' in target
    assert '"age"' not in target and '"income"' not in target  # numeric columns are no labels
    assert "(none: unlabeled mode)" in target
    assert (
        "Leave empty for the automatic value"
        not in page[page.index('name="param_target"') : page.index('name="param_features"')]
    )


def test_suggested_delta_is_a_power_of_ten_below_one_tenth_of_one_over_n():
    from dpportal.releases.forms import suggested_delta

    assert [suggested_delta(n) for n in (6, 100, 32_561, 1_000_000)] == ["1e-2", "1e-3", "1e-6", "1e-7"]
    for n in (6, 100, 32_561, 999_999):
        assert float(suggested_delta(n)) <= 1 / (10 * n)


def test_a_numeric_target_is_refused_by_the_param_spec():
    from mechanisms.synthesizers.dpmerf import DPMERF
    from mechanisms.schema import Schema

    spec = next(s for s in DPMERF.params if s.name == "target")
    with pytest.raises(ValueError, match="target must be a categorical column, got target='age' of kind 'integer'"):
        spec.coerce("age", Schema.from_dict(SMALL_SCHEMA))


def test_the_prefilled_delta_never_exceeds_the_delta_the_guide_planned_with():
    """A tiny table (n = 6) suggests delta 1e-2 (< 1/(10 n)), but a budget with 1e-5 of delta left would
    refuse it on submit: the form pre-fills the smaller of the two (the browser walk caught it when the
    recommendation became density-lp's Gaussian mode on a 6-row table)."""
    from dpportal.releases.forms import ReleaseForm
    from mechanisms.schema import Schema

    schema = Schema.from_dict(SMALL_SCHEMA)
    guide = {
        "epsilon": 1.0,
        "delta": 1e-5,
        "delta_given": False,
        "purpose": "explore",
        "mechanisms": [{"mechanism": "baseline", "params": {"noise_type": "gaussian"}, "status": "recommended"}],
    }
    form = ReleaseForm(mechanism_cls=registry.get("baseline"), schema=schema, n_rows=6)
    form.apply_guide(guide)
    assert form.fields["delta"].initial == "1e-05"
    big = ReleaseForm(mechanism_cls=registry.get("baseline"), schema=schema, n_rows=1_000_000)
    big.apply_guide(guide)
    assert big.fields["delta"].initial == "1e-7"  # the suggestion, below what the guide planned with
    given = ReleaseForm(mechanism_cls=registry.get("baseline"), schema=schema, n_rows=6)
    given.apply_guide({**guide, "delta_given": True})
    assert given.fields["delta"].initial == "1e-05"  # typed by the steward in the purpose step


def test_the_delta_preset_leaves_half_the_remaining_delta_and_a_release_taking_all_of_it_is_warned(world):
    from dpportal.ledger.services import remaining

    url = f"/datasets/{world.dataset.pk}/releases/new/"
    left = remaining(world.dataset)["delta"]["remaining_float"]  # 1e-5: the tiny table suggests 1e-2
    c = world.client(world.owner)
    page = c.get(url, {"mechanism": "aim"})
    assert float(page.context["form"]["delta"].value()) <= left / 2
    assert "Leaves δ 5e-06 of the remaining 1e-05" in page.content.decode()
    assert float(page.context["guide"]["delta"]) <= left / 2  # the recommendation plans with the same delta
    post = {**_defaults(registry.get("aim")), "delta": "1e-5", "estimate": "1"}
    warned = c.post(url, post).content.decode()
    from mechanisms.guidance.glossary import approximate_mechanisms

    assert 'class="warning" id="delta-note"' in warned and approximate_mechanisms() in warned
    assert "aim" in approximate_mechanisms() and "Gaussian modes of baseline" in approximate_mechanisms()
    assert "can no longer run on this dataset" in warned
    assert 'id="delta-note"' not in c.get(url, {"mechanism": "baseline"}).content.decode()  # pure: no delta
