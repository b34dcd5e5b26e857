"""Every command and repository path quoted in the documentation exists: ``python -m X`` names a module
(and ``python -m mechanisms SUB`` a subcommand), ``make Y`` a Makefile target, ``manage.py Z`` a management
command, and a quoted path such as ``mechanisms/aim.py`` a file or folder. Only code is read (`spans` and
fenced blocks), so prose such as "make sure" is not taken for a command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", REPO / "SECURITY.md", *(REPO / "docs").rglob("*.md")])
LOCAL = ("benchmarks", "dpportal", "mechanisms", "scripts", "tests")
PATH_ROOTS = (*LOCAL, "docs", "samples", "static", "templates")

FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
SPAN = re.compile(r"`([^`\n]+)`")
PY_M = re.compile(r"\bpython[0-9.]*\s+-m\s+([A-Za-z_][\w.]*)(?:\s+([a-z][\w-]*))?")
MAKE = re.compile(r"(?:^|[\s;&(])make\s+([a-z][\w-]*)")
MANAGE = re.compile(r"\bmanage\.py\s+([a-z_]+)")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*<>{}-]*[\w/*>}])" % "|".join(PATH_ROOTS))
# patterns and placeholders, and run outputs (git-ignored) are not checked
PLACEHOLDER = re.compile(r"NAME|TABLE|\.\.\.|[*<{]|^benchmarks/out/")


def _code(text: str) -> list[str]:
    return FENCE.findall(text) + SPAN.findall(FENCE.sub("", text))


def _quoted(pattern: re.Pattern) -> list[tuple[str, tuple[str, ...]]]:
    return [
        (f"{doc.relative_to(REPO)}", m.groups())
        for doc in DOCS
        for code in _code(doc.read_text())
        for m in pattern.finditer(code)
    ]


def _module_exists(name: str) -> bool:
    parts = name.split(".")
    if parts[0] not in LOCAL:
        return importlib.util.find_spec(name) is not None
    base = REPO.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__main__.py").is_file()


def test_every_python_m_names_a_module_and_every_cli_subcommand_exists():
    subcommands = set(re.findall(r"add_parser\(\"([\w-]+)\"", (REPO / "mechanisms" / "__main__.py").read_text()))
    missing = [(doc, module) for doc, (module, _) in _quoted(PY_M) if not _module_exists(module)]
    missing += [
        (doc, f"mechanisms {sub}")
        for doc, (module, sub) in _quoted(PY_M)
        if module == "mechanisms" and sub and sub not in subcommands
    ]
    assert missing == []


def test_every_make_target_is_in_the_makefile():
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    assert [(doc, target) for doc, (target,) in _quoted(MAKE) if target not in targets] == []


@pytest.mark.django_db(databases=[])
def test_every_manage_py_command_exists():
    from django.core.management import get_commands

    commands = get_commands()
    assert [(doc, c) for doc, (c,) in _quoted(MANAGE) if c not in commands] == []


def test_every_quoted_repository_path_exists():
    missing = [
        (doc, path)
        for doc, (path,) in _quoted(PATH)
        if not PLACEHOLDER.search(path) and not (REPO / path.split("::")[0]).exists()
    ]
    assert missing == []


def test_the_patterns_catch_what_they_are_for():  # the checks above can fail
    code = _code(
        "Run `python -m benchmarks.nowhere x` or `make no-such`; see `mechanisms/nothing.py`.\n"
        "```sh\n.venv/bin/python -m mechanisms frobnicate --x\npython manage.py no_command\n```\n"
    )
    found = [m.groups() for pattern in (PY_M, MAKE, MANAGE, PATH) for c in code for m in pattern.finditer(c)]
    assert ("benchmarks.nowhere", "x") in found and ("mechanisms", "frobnicate") in found
    assert ("no-such",) in found and ("no_command",) in found and ("mechanisms/nothing.py",) in found
    assert not _module_exists("benchmarks.nowhere") and _module_exists("benchmarks.harness.compare")
    assert _code("we make sure of it") == []
