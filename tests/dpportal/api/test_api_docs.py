"""docs/api.md's curl walk-through works on an install that already holds data: every id in a command
comes from an earlier answer, none is written in."""

from __future__ import annotations

import re
from pathlib import Path

API_MD = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def _walk_commands() -> list[str]:
    block = API_MD.read_text().split("## Walk-through with curl", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_walk_through_uses_the_ids_the_answers_give():
    commands = _walk_commands()
    hard = [c for c in commands if re.search(r"/api/(datasets|releases)/\d", c)]
    assert hard == [], hard
    text = "\n".join(commands)
    assert text.index("DS=$(") < text.index("/api/datasets/$DS/schema/")
    assert text.index("REL=$(") < text.index("/api/releases/$REL/")
