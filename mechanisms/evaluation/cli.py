"""``python -m mechanisms evaluate``: the utility report in a terminal."""

from __future__ import annotations

import json
import sys

from ..schema import Schema
from .tables import load_prepared
from .utility import evaluate


def cli(args) -> int:
    """``python -m mechanisms evaluate``: print a short summary (the whole evaluation as JSON with --json)."""
    try:
        with open(args.schema, encoding="utf-8") as fh:
            schema = Schema.from_json(fh.read())
    except OSError as exc:
        raise ValueError(f"cannot read schema {args.schema!r}: {exc.strerror}") from None
    if args.test and not args.target:
        raise ValueError("--test needs --target")
    real = load_prepared(schema, args.real)
    syn = load_prepared(schema, args.synthetic, synthetic=True)
    test = load_prepared(schema, args.test) if args.test else None
    res = evaluate(
        schema,
        real,
        syn,
        target=args.target,
        test=test,
        seed=getattr(args, "seed", 0) or 0,
        fast=bool(getattr(args, "fast", False)),
    )
    if getattr(args, "json", False) or getattr(args, "compact", False):
        json.dump(res, sys.stdout, indent=None if getattr(args, "compact", False) else 1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary_text(res) + "\n")
    return 0


def summary_text(res: dict) -> str:
    """The evaluation in a few lines for a terminal: sizes, then one line per reading."""
    head = (
        f"Real rows {res['n_real']:,}, synthetic rows {res['n_synthetic']:,}; "
        f"evaluated in {res['seconds']:.1f} s. NOT PRIVATE: computed from the raw data."
    )
    width = max(len(r["metric"]) for r in res["readings"]) + 2
    lines = [head, ""] + [f"{r['metric']:<{width}}{_short_value(r['value'])}  {r['reading']}" for r in res["readings"]]
    lines += ["", "Every number and the per-column detail: add --json"]
    return "\n".join(lines)


def _short_value(v) -> str:
    return f"{v:>8.4f}" if isinstance(v, (int, float)) else f"{'n/a':>8}"
