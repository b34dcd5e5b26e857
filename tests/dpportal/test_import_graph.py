"""The import graph of dpportal and mechanisms, read from the source (ast, no import executed).

Contracts:
* no import circle inside a dpportal app (function-level imports count: they run too);
* no private name (``_x``) imported across modules by dpportal;
* arrows point down: web (views, API, dashboards) -> releases -> mechanisms. The releases app below
  its views never imports the dashboards or the API, its services never reach up into its forms or
  views, and mechanisms never imports dpportal or Django.

Each check is also run on a small made-up graph that breaks it, to show it can fail.
"""

from __future__ import annotations


from tests.graphs import cycles, imports
from tests.graphs import sources as graphs_sources

APPS = ("accounts", "api", "dashboards", "datasets", "ledger", "releases")


def graph(tops=("dpportal", "mechanisms")) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Module -> modules it imports (within the project), and every (importer, module, name) import."""
    sources = {}
    for top in tops:
        sources.update(graphs_sources(top))
    known = set(sources)
    edges: dict[str, set[str]] = {m: set() for m in sources}
    names = []
    for module, path in sources.items():
        for target, name in imports(module, path, known):
            names.append((module, target, name))
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges[module].add(target)
    return edges, names


def app_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if parts[0] == "dpportal" and len(parts) > 2 and parts[1] in APPS else parts[0]


def cycles_inside_apps(edges: dict[str, set[str]]) -> list[list[str]]:
    """Import circles of more than one module whose modules share a dpportal app: the strongly connected
    components of the graph of dpportal's imports that stay inside an app."""
    inside = {v: {w for w in ws if app_of(w) == app_of(v)} for v, ws in edges.items() if v.startswith("dpportal")}
    return cycles(inside)


def private_imports(names: list[tuple[str, str, str]]) -> list[str]:
    return sorted(
        f"{importer} imports {module}.{name}"
        for importer, module, name in names
        if name.startswith("_") and not name.startswith("__") and importer.startswith("dpportal")
    )


def _is_web(module: str) -> bool:
    return app_of(module) in ("api", "dashboards") or module.split(".")[-1] in ("views", "forms", "urls", "admin")


def upward_arrows(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if module.startswith("mechanisms") and target.startswith("dpportal"):
                bad.append(f"{module} -> {target} (mechanisms never imports dpportal)")
            elif app_of(module) == "releases" and not _is_web(module) and _is_web(target):
                bad.append(f"{module} -> {target} (releases below its views reaches up into the web)")
    return bad


def test_no_import_circle_inside_a_dpportal_app():
    edges, _ = graph()
    assert cycles_inside_apps(edges) == []


def test_no_private_name_is_imported_across_modules():
    _, names = graph()
    assert private_imports(names) == []


def test_imports_point_down_from_the_web_to_releases_to_mechanisms():
    edges, _ = graph()
    assert upward_arrows(edges) == []


def test_mechanisms_never_imports_django():
    _, names = graph(("mechanisms",))
    assert sorted({m for _, m, _ in names if m.split(".")[0] == "django"}) == []


def test_the_checks_catch_a_circle_a_private_import_and_an_upward_arrow():
    edges = {
        "dpportal.releases.services.planning": {"dpportal.releases.tasks"},
        "dpportal.releases.tasks": {"dpportal.releases.services"},
        "dpportal.releases.services": {"dpportal.releases.services.planning"},
        "dpportal.releases.services.estimates": {"dpportal.releases.forms", "dpportal.dashboards.risk"},
        "mechanisms.runner": {"dpportal.releases.models"},
        "dpportal.dashboards.risk": {"dpportal.releases.models"},
    }
    assert cycles_inside_apps(edges) == [
        ["dpportal.releases.services", "dpportal.releases.services.planning", "dpportal.releases.tasks"]
    ]
    assert private_imports([("dpportal.releases.sweeper", "dpportal.releases.services.worker", "_close_ledger")]) == [
        "dpportal.releases.sweeper imports dpportal.releases.services.worker._close_ledger"
    ]
    assert len(upward_arrows(edges)) == 3
