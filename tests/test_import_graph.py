"""The import graph of ``mechanisms``, read from the source (ast: no import executed; imports inside
functions count, they run too; those under ``if TYPE_CHECKING:`` never run and do not).

Contracts:
* no import circle between the library's packages and modules (``mechanisms.risk``, ``mechanisms.pgm``,
  ``mechanisms.synthesizers.mst``, ``mechanisms.schema``, ...: each subpackage one node);
* ``mechanisms`` never imports Django or ``dpportal`` (the library runs without the web app);
* no private name (``_x``) imported from another module of ``mechanisms``.

Each check also runs on a small made-up graph that breaks it, to show it can fail.
"""

from __future__ import annotations


from tests.graphs import cycles, imports, sources

NODE_PACKAGES = ("mechanisms.synthesizers",)  # packages whose subpackages are nodes of their own


def node_of(module: str) -> str:
    """The graph node of a module: ``mechanisms.X`` for a top-level module or package X; one level
    deeper under ``NODE_PACKAGES`` (each synthesizer's home is its own node)."""
    parts = module.split(".")
    for pkg in NODE_PACKAGES:
        depth = len(pkg.split("."))
        if module.startswith(pkg + "."):
            return ".".join(parts[: depth + 1])
    return ".".join(parts[:2])


def package_graph(all_imports: dict[str, list[tuple[str, str]]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, imported in all_imports.items():
        a = node_of(module)
        edges.setdefault(a, set())
        for target, _ in imported:
            if target == "mechanisms" or target.startswith("mechanisms."):
                b = node_of(target)
                if b != a and b != "mechanisms":
                    edges[a].add(b)
    return edges


def forbidden(all_imports: dict[str, list[tuple[str, str]]]) -> list[str]:
    return sorted(
        f"{m} imports {t}"
        for m, imported in all_imports.items()
        for t, _ in imported
        if t.split(".")[0] in ("django", "dpportal")
    )


def private_imports(all_imports: dict[str, list[tuple[str, str]]]) -> list[str]:
    """``from <another mechanisms module> import _x``, and ``import mechanisms._x``-style paths."""
    out = []
    for m, imported in all_imports.items():
        for t, n in imported:
            if not (t == "mechanisms" or t.startswith("mechanisms.")) or t == m:
                continue
            hidden = [p for p in t.split(".") + ([n] if n else []) if p.startswith("_") and not p.startswith("__")]
            if hidden:
                out.append(f"{m} imports {t}{'.' + n if n else ''}")
    return sorted(out)


def _all_imports() -> dict[str, list[tuple[str, str]]]:
    src = sources()
    known = set(src)
    return {m: imports(m, p, known) for m, p in src.items()}


def test_no_import_circle_between_the_library_packages():
    assert cycles(package_graph(_all_imports())) == []


def test_mechanisms_never_imports_django_or_the_web_app():
    assert forbidden(_all_imports()) == []


def test_no_private_name_is_imported_across_modules():
    assert private_imports(_all_imports()) == []


def test_the_checks_catch_a_made_up_graph_that_breaks_them():
    broken = {
        "mechanisms.schema": [("mechanisms.noise", "Noise"), ("django.db", "models")],
        "mechanisms.noise": [("mechanisms.risk.game", "rounded")],
        "mechanisms.risk.game": [("mechanisms.schema", "_fmt"), ("dpportal.ledger", "")],
        "mechanisms.synthesizers.mst": [("mechanisms.synthesizers.aim", "")],
        "mechanisms.synthesizers.aim.guide": [("mechanisms.synthesizers.mst", "")],
    }
    assert cycles(package_graph(broken)) == [
        ["mechanisms.noise", "mechanisms.risk", "mechanisms.schema"],
        ["mechanisms.synthesizers.aim", "mechanisms.synthesizers.mst"],
    ]
    assert forbidden(broken) == ["mechanisms.risk.game imports dpportal.ledger", "mechanisms.schema imports django.db"]
    assert private_imports(broken) == ["mechanisms.risk.game imports mechanisms.schema._fmt"]
