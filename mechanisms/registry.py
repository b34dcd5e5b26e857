"""Mechanism registry: name -> the mechanism's home (its package under mechanisms/synthesizers/), loaded
lazily so a heavy dependency (torch) is imported only when its mechanism is used. A home declares every
part the guidance reads (``Mechanism.missing_parts``); one that does not is refused here, by name."""

from __future__ import annotations

import importlib

from .base import Mechanism
from .schema import Schema

_ENTRIES: dict[str, str] = {
    "baseline": "mechanisms.synthesizers.baseline:Baseline",
    "kdtree-grid": "mechanisms.synthesizers.kdtree:KDTreeGrid",
    "kdtree-adaptive": "mechanisms.synthesizers.kdtree:KDTreeAdaptive",
    "pmse": "mechanisms.synthesizers.pmse:PMSEMechanism",
    "privhp": "mechanisms.synthesizers.privhp:PrivHP",
    "density-lp": "mechanisms.synthesizers.density_lp:DensityLP",
    "dpmerf": "mechanisms.synthesizers.dpmerf:DPMERF",
    "aim": "mechanisms.synthesizers.aim:AIM",
    "mst": "mechanisms.synthesizers.mst:MST",
    "crosstabs": "mechanisms.tables:TablesRelease",
}
_COMPLETE: set[type] = set()  # homes already checked (recommend looks them up many times)


def names() -> list[str]:
    return list(_ENTRIES)


def get(name: str) -> type[Mechanism]:
    if name not in _ENTRIES:
        raise ValueError(f"unknown mechanism {name!r}; available: {names()}")
    module, attr = _ENTRIES[name].split(":")
    cls = getattr(importlib.import_module(module), attr)
    assert cls.name == name, (cls.name, name)
    if cls not in _COMPLETE:
        missing = cls.missing_parts()
        if missing:
            raise TypeError(
                f"mechanism {name!r} does not declare {missing} (mechanisms/base.py: public-input guidance)"
            )
        _COMPLETE.add(cls)
    return cls


def describe_all() -> list[dict]:
    return [get(n).describe() for n in names()]


def supporting(schema: Schema) -> list[str]:
    """Names of the mechanisms that support every kept column kind of ``schema``."""
    return [n for n in names() if not (schema.kinds - get(n).supported_kinds)]
