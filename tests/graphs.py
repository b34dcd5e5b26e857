"""Graph helpers the import-graph checks share."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def sources(top: str = "mechanisms") -> dict[str, Path]:
    """Module name -> file for every Python file under ``top`` (migrations left out)."""
    return {_module_name(p): p for p in sorted((ROOT / top).rglob("*.py")) if "migrations" not in p.parts}


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, str]]:
    """(module imported, name imported from it or "") for every import statement of a module (read with ast,
    nothing executed); imports inside functions count, those under ``if TYPE_CHECKING:`` never run and do not."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(), filename=str(path))
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub, "") if sub in known else (base, alias.name))
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out
