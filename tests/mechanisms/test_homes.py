"""One home per mechanism: every registered mechanism declares each public-input part the guidance reads
(accuracy predictor, near-uniform rule, run-time model, steward help, measured model quality, speed rank,
target structure), an incomplete one is refused by name, and no other module names a mechanism."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mechanisms import registry
from mechanisms.base import Mechanism, ParamSpec
from mechanisms.guidance.purposes import Errors, Setting
from mechanisms.guidance.runtime import RuntimeModel
from mechanisms.schema import Column, Schema

ROOT = Path(__file__).resolve().parents[2]
SMALL = Schema(
    columns=(
        Column("x", "continuous", lower=0.0, upper=1.0, bins=4),
        Column("c", "categorical", categories=("a", "b", "c")),
    )
)


@pytest.mark.parametrize("name", registry.names())
def test_every_registered_mechanism_declares_every_part(name):
    cls = registry.get(name)
    assert cls.missing_parts() == []
    assert isinstance(cls.runtime_model, RuntimeModel)
    assert set(cls.steward_help) == {p.name for p in cls.params}, "help for a parameter the mechanism lacks"
    assert all(variant.split(":")[0] == name and eps > 0 for variant, eps in cls.tstr_measured)
    assert cls.target_structure in ("conditional", "joint", "independent")
    setting = Setting(SMALL, 2_000, 1.0, 1e-5)
    errors = cls.predict_accuracy(setting, {p.name: p.default for p in cls.params})
    assert errors is None or (isinstance(errors, Errors) and len(errors.one_way) == 2)
    failure = cls.near_uniform(setting)
    assert failure is None or isinstance(failure, str)


def test_speed_ranks_order_the_mechanisms_without_ties():
    ranks = [registry.get(n).speed_rank for n in registry.names()]
    assert sorted(ranks) == list(range(len(ranks)))


class Incomplete(Mechanism):
    """A mechanism wired in with its accuracy model and nothing else."""

    name = "incomplete"
    params = (ParamSpec("width", "float", 0.1, "cell width"),)
    predict_accuracy = staticmethod(lambda setting, params: None)
    steward_help = {}
    target_structure = "conditional"  # but no target_how


def test_a_mechanism_missing_parts_is_named_and_refused_by_the_registry(monkeypatch):
    assert Incomplete.missing_parts() == [
        "near_uniform",
        "runtime_model",
        "tstr_measured",
        "speed_rank",
        "target_how",
        "steward_help[width]",
    ]
    monkeypatch.setitem(registry._ENTRIES, "incomplete", f"{__name__}:Incomplete")
    with pytest.raises(TypeError, match=r"'incomplete' does not declare \['near_uniform'"):
        registry.get("incomplete")


def test_a_guide_module_binds_its_standard_names_and_a_partial_one_is_caught():
    from types import ModuleType

    from mechanisms.synthesizers.mst import MST, guide

    assert MST.runtime_model is guide.RUNTIME and MST.steward_help is guide.STEWARD_HELP
    assert MST.predict_accuracy is guide.predict_accuracy and MST.near_uniform is guide.near_uniform
    partial = ModuleType("partial_guide")
    partial.STEWARD_HELP = {}
    partial.predict_accuracy = guide.predict_accuracy

    class Half(Mechanism):
        name = "half"
        guide = partial
        speed_rank = 99
        target_structure = "joint"

    assert Half.missing_parts() == ["near_uniform", "runtime_model", "tstr_measured"]


def test_the_guides_read_public_inputs_only():
    """A guide.py sees the schema, n, epsilon, delta and parameters: never a table source."""
    for guide in sorted((ROOT / "mechanisms" / "synthesizers").glob("*/guide.py")):
        text = guide.read_text()
        assert not re.search(r"TableSource|\.chunks\(|\.frame\(|read_csv|read_raw_csv", text), guide


# "pmse" in the evaluation is the pMSE utility metric's result key, not the mechanism.
NOT_A_MECHANISM = {("mechanisms/evaluation", "pmse")}


def test_no_module_outside_a_mechanisms_home_and_the_registry_names_it():
    homes = {name: Path(registry.get(name).__module__.replace(".", "/")) for name in registry.names()}
    offenders = []
    for path in sorted([*(ROOT / "mechanisms").rglob("*.py"), *(ROOT / "dpportal").rglob("*.py")]):
        rel = path.relative_to(ROOT)
        if rel.as_posix() == "mechanisms/registry.py":
            continue
        text = path.read_text()
        for name, home in homes.items():
            if rel.is_relative_to(home) or any(rel.as_posix().startswith(p) and n == name for p, n in NOT_A_MECHANISM):
                continue
            if re.search(rf"[\"']{re.escape(name)}[\"']", text):
                offenders.append(f"{rel}: {name}")
    assert not offenders, offenders
