"""Command line: ``python -m mechanisms {list, schema draft, synthesize, evaluate, recommend, risk, tables}``.

Errors exit non-zero with one line naming the problem.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

from . import registry, safejson
from .accounting import exact
from .io import write_synthetic_csv
from .noise import Noise
from .runner import build, run
from .draft import draft_schema
from .schema import Schema, SchemaError, SchemaMismatch, check_header
from .source import TableSource, read_raw_csv


class CLIError(Exception):
    pass


def _parse_params(items: list[str]) -> dict:
    params = {}
    for item in items or []:
        if "=" not in item:
            raise CLIError(f"--param needs KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = v
    return params


def _load_schema(path: str) -> Schema:
    """The schema file, read at most to its size limit (``--schema /dev/zero`` must not fill memory)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(safejson.MAX_BYTES + 1)
    except OSError as exc:
        raise CLIError(f"cannot read schema {path!r}: {exc.strerror}") from None
    if len(data) > safejson.MAX_BYTES:
        raise CLIError(f"schema {path!r} is larger than the limit of {safejson.MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CLIError(f"schema {path!r} is not UTF-8 text") from None
    return Schema.from_json(text)


NUL_SCAN_BYTES = 1 << 20


def _check_data(path: str) -> list[str]:
    """The data file's header, checked as the web upload checks it (no empty, duplicate, invisible or
    look-alike names), and no NUL byte anywhere (a binary or UTF-16 file). Returns the header."""
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(NUL_SCAN_BYTES):
                if b"\x00" in chunk:
                    raise CLIError(
                        f"data {path!r} contains NUL bytes: it looks binary (or UTF-16), not a CSV text file"
                    )
        with open(path, encoding="utf-8", newline="") as fh:
            header = [h.strip() for h in next(csv.reader(fh), [])]
    except OSError as exc:
        raise CLIError(f"cannot read data {path!r}: {exc.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise CLIError(f"cannot read the header of {path!r}: {exc}") from None
    if not header:
        raise CLIError(f"data {path!r} has no header row (the first line must name the columns)")
    check_header(header)
    return header


def max_rows() -> int:
    """The largest --rows (``DPPORTAL_MAX_SYNTHETIC_ROWS``, as for the web app; default 1,000,000)."""
    text = os.environ.get("DPPORTAL_MAX_SYNTHETIC_ROWS", "1000000")
    if not (text.isascii() and text.isdigit() and 0 < int(text) <= 10**9):
        raise CLIError(f"DPPORTAL_MAX_SYNTHETIC_ROWS must be a whole number from 1 to 10^9, got {text[:40]!r}")
    return int(text)


def _check_rows(rows: int | None, n: int) -> int:
    rows = n if rows is None else rows
    limit = max_rows()
    if not 1 <= rows <= limit:
        raise CLIError(f"--rows must be between 1 and {limit:,} (DPPORTAL_MAX_SYNTHETIC_ROWS), got {rows:,}")
    return rows


def _check_out(path: str) -> None:
    """Refuse an output the CLI could not write before any private data is read."""
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if os.path.isdir(target):
        raise CLIError(f"--out {path!r} is a directory; give a file name")
    if not os.path.isdir(parent):
        raise CLIError(f"--out {path!r}: the directory {parent!r} does not exist")
    if not os.access(target if os.path.exists(target) else parent, os.W_OK):
        raise CLIError(f"--out {path!r} is not writable (permission denied)")


def cmd_list(args) -> int:
    mechs = registry.describe_all()
    if getattr(args, "json", False):
        print(json.dumps(mechs, indent=2, ensure_ascii=False))
    else:
        print(list_summary(mechs))
    return 0


def list_summary(mechs: list[dict]) -> str:
    """One block per mechanism: name and title, kinds and guarantee, each parameter with its default."""
    lines = []
    width = max(len(m["name"]) for m in mechs) + 2
    for m in mechs:
        pad = " " * width
        lines.append(f"{m['name']:<{width}}{m['title']}")
        privacy = "epsilon and delta (approximate DP)" if m["needs_delta"] else "epsilon only (pure DP)"
        extra = "; streams tables larger than memory" if m.get("streaming") else ""
        lines.append(f"{pad}columns: {', '.join(m['supported_kinds'])}; {privacy}{extra}")
        for p in m["params"]:
            default = "automatic" if p["default"] is None else "none" if p["default"] == "" else p["default"]
            lines.append(f"{pad}  --param {p['name']}=...  ({p['type']}, default {default}): {p['help']}")
        if not m["params"]:
            lines.append(f"{pad}  (no parameters)")
    lines.append("\nFull descriptions as JSON: python -m mechanisms list --json")
    return "\n".join(lines)


def cmd_schema(args) -> int:
    if args.action != "draft":
        raise CLIError(f"unknown schema action {args.action!r}; use 'draft'")
    _check_data(args.data)
    try:
        raw = read_raw_csv(args.data)
    except OSError as exc:
        raise CLIError(f"cannot read data {args.data!r}: {exc.strerror}") from None
    schema = draft_schema(raw)
    d = schema.to_dict()
    d["suggested_from_data"] = True
    d["note"] = (
        "DRAFT: bounds and categories below were computed from the data. Confirm them as public "
        'knowledge (edit, set "draft": false) before any release.'
    )
    print(json.dumps(d, indent=2))
    return 0


def _confirmed_schema_and_noise(args):
    """The confirmed schema of ``--schema`` and the noise source: the secure sampler, or seeded noise with a
    warning that the output is then not differentially private."""
    schema = _load_schema(args.schema)
    if schema.draft:
        raise CLIError('the schema is a draft: review it and set "draft": false to confirm it as public')
    noise = Noise.seeded(args.seed) if args.seed is not None else Noise.secure_backend()
    if args.seed is not None:
        print(
            "warning: --seed draws reproducible noise: the output is NOT differentially private (tests only)",
            file=sys.stderr,
        )
    return schema, noise


def cmd_synthesize(args) -> int:
    schema, noise = _confirmed_schema_and_noise(args)
    mech = build(
        args.mechanism, schema, epsilon=args.epsilon, delta=args.delta, params=_parse_params(args.param), noise=noise
    )
    schema.check_columns(_check_data(args.data))
    _check_out(args.out)
    source = TableSource(schema, path=args.data)
    rows = _check_rows(args.rows, source.n)
    mech.check_plan(source.n)  # n is public: refuse plan errors before any private value is read
    t0 = time.perf_counter()
    release = run(mech, source, rows)
    try:
        write_synthetic_csv(release.synthetic, args.out, schema)
    except OSError as exc:
        raise CLIError(f"cannot write --out {args.out!r}: {exc.strerror}") from None
    out = release.report()
    out.update(rows=len(release.synthetic), seconds=round(time.perf_counter() - t0, 3), out=args.out)
    print(json.dumps(out, default=str))
    return 0


def cmd_evaluate(args) -> int:
    from .evaluation.cli import cli

    return cli(args)


def cmd_risk(args) -> int:
    """The privacy risk report of a mechanism on a table (NOT private: reads the raw data; steward-only)."""
    from . import risk

    schema = _load_schema(args.schema)
    if schema.draft:
        raise CLIError('the schema is a draft: review it and set "draft": false to confirm it as public')
    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        raise CLIError(f"--params must be a JSON object: {exc.msg}") from None
    if not isinstance(params, dict):
        raise CLIError(f"--params must be a JSON object, got {type(params).__name__}")
    try:
        raw = read_raw_csv(args.data)
    except OSError as exc:
        raise CLIError(f"cannot read data {args.data!r}: {exc.strerror}") from None
    prepared = schema.prepare(raw) if len(raw) else None
    noise = Noise.seeded(args.seed) if args.seed is not None else Noise.secure_backend()
    report = risk.risk_report(
        schema,
        prepared,
        args.mechanism,
        epsilon=_amount(args.epsilon, "epsilon"),
        delta=_amount(args.delta, "delta"),
        params=params,
        runs=args.runs,
        noise=noise,
        confidence=args.confidence,
        noise_off_control=not args.no_noise_off_control,
        max_rows=args.max_rows,
        time_budget=args.seconds,
        shadow=not args.no_shadow,
        check_runs=args.check_runs,
        **({"canary_pairs": args.pairs} if args.pairs is not None else {}),
    )
    print(json.dumps(report, indent=2 if args.pretty else None))
    return 0


def cmd_tables(args) -> int:
    """Crosstabs with error bars: the named tables measured by the tables release (ResidualPlanner)."""
    from .runner import seeded_report
    from .tables import TablesRelease

    schema, noise = _confirmed_schema_and_noise(args)
    params = {"tables": ";".join(args.table), "nonnegative": args.nonnegative}
    mech = build(TablesRelease.name, schema, epsilon=args.epsilon, delta=args.delta, params=params, noise=noise)
    schema.check_columns(_check_data(args.data))
    source = TableSource(schema, path=args.data)
    mech.check_plan(source.n)
    mech.fit(source)
    out = mech.tables()
    privacy = mech.privacy_cost().to_dict()
    out["privacy"] = privacy if noise.secure else seeded_report(privacy)
    if args.json:
        print(json.dumps(out))
        return 0
    for t in out["tables"]:
        se = t["cells"][0]["se"]
        print(f"{' x '.join(t['columns'])}: cell standard error {se:.3g} (95% interval: +- 1.96 se)")
        for c in t["cells"]:
            print(f"  {' | '.join(c['values'])}: {c['estimate']:.1f} [{c['lo']:.1f}, {c['hi']:.1f}]")
    return 0


def _amount(value: str, name: str) -> float:
    """An amount parsed as everywhere else (``accounting.exact``: plain ASCII text, bounded)."""
    try:
        return float(exact(value))
    except ValueError as exc:
        raise CLIError(f"{name}: {exc}") from None


def cmd_recommend(args) -> int:
    """Which mechanism and epsilon suit a purpose: from the schema and the public row count only."""
    from .guidance import recommend as rec

    schema = _load_schema(args.schema)
    if schema.draft:
        raise CLIError('the schema is a draft: review it and set "draft": false to confirm it as public')
    purpose = rec.Purpose.parse(
        args.purpose,
        target=args.target,
        pairs=args.pairs,
        larger_than_memory=args.larger_than_memory,
        key_columns=args.key_columns,
    )
    epsilon, delta = _amount(args.epsilon, "epsilon"), _amount(args.delta, "delta")
    result = rec.recommend(schema, n=args.rows, epsilon=epsilon, delta=delta, purpose=purpose)
    out = result.to_dict()
    if args.target_error is not None and result.recommended:
        out["target_error"] = args.target_error
        out["smallest_epsilon"] = rec.smallest_epsilon(
            result.recommended, schema, n=args.rows, delta=delta, purpose=purpose, target=args.target_error
        )
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(rec.summary_text(result, out.get("smallest_epsilon"), args.target_error))
    return 0


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mechanisms", description="dpportal DP synthesis library")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="mechanisms, parameters and supported column kinds")
    ls.add_argument("--json", action="store_true", help="print the descriptions as JSON")
    s = sub.add_parser("schema", help="schema tools")
    s.add_argument("action", help="'draft'")
    s.add_argument("data")
    r = sub.add_parser("recommend", help="recommended mechanism and predicted accuracy (public inputs only)")
    r.add_argument("--schema", required=True, help="confirmed schema JSON")
    r.add_argument("--rows", type=int, required=True, help="public row count n")
    r.add_argument("--epsilon", required=True)
    r.add_argument("--delta", default="0")
    r.add_argument("--purpose", default="explore", choices=("explore", "marginals", "ml"))
    r.add_argument("--target", default=None, help="ml: the column models will predict")
    r.add_argument("--pairs", default=None, help="marginals: 'a:b,c:d' (default all pairs)")
    r.add_argument(
        "--key-columns", default=None, help="explore: up to 3 columns 'a,b' everything is cross-tabulated by first"
    )
    r.add_argument("--larger-than-memory", action="store_true", help="only streaming mechanisms can run")
    r.add_argument(
        "--target-error",
        type=float,
        default=None,
        help="also report the smallest epsilon whose predicted error is at most this (e.g. 0.1)",
    )
    r.add_argument("--json", action="store_true", help="JSON instead of the human summary")
    y = sub.add_parser("synthesize", help="release a synthetic CSV")
    y.add_argument("mechanism")
    y.add_argument("--data", required=True)
    y.add_argument("--schema", required=True)
    y.add_argument("--epsilon", required=True)
    y.add_argument("--delta", default="0")
    y.add_argument("--rows", type=int, default=None)
    y.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    y.add_argument("--out", required=True)
    y.add_argument(
        "--seed",
        type=int,
        default=None,
        help="TESTS ONLY: seeded, reproducible noise; the output is NOT differentially private and "
        "its report says so (guarantee 'none (seeded: tests only)')",
    )
    e = sub.add_parser("evaluate", help="utility metrics real vs synthetic (NOT private)")
    e.add_argument("--real", required=True)
    e.add_argument("--synthetic", required=True)
    e.add_argument("--schema", required=True)
    e.add_argument("--target", default=None)
    e.add_argument("--test", default=None, help="real held-out CSV for TSTR (needs --target)")
    e.add_argument("--seed", type=int, default=0, help="seed of the (non-private) evaluation sampling")
    e.add_argument("--fast", action="store_true", help="TSTR on fewer rows with fewer trees")
    e.add_argument("--json", action="store_true", help="print the whole evaluation as JSON (default: a summary)")
    e.add_argument("--compact", action="store_true", help="one-line JSON (implies --json)")
    t = sub.add_parser("tables", help="crosstabs with standard errors and 95%% intervals (a DP release)")
    t.add_argument("--data", required=True)
    t.add_argument("--schema", required=True)
    t.add_argument("--epsilon", required=True)
    t.add_argument("--delta", default="1e-6", help="Gaussian noise (zCDP) needs a delta (default 1e-6)")
    t.add_argument("--table", action="append", required=True, help="1-3 columns 'a,b' ('age/5': 5 cells per bin)")
    t.add_argument("--nonnegative", action="store_true", help="non-negative consistent counts (intervals unchanged)")
    t.add_argument("--seed", type=int, default=None, help="TESTS ONLY: seeded non-secure noise")
    t.add_argument("--json", action="store_true", help="the tables as JSON")
    k = sub.add_parser("risk", help="privacy risk report: attacks on refits, epsilon lower bound (NOT private)")
    k.add_argument("--data", required=True)
    k.add_argument("--schema", required=True)
    k.add_argument("--mechanism", required=True)
    k.add_argument("--epsilon", required=True)
    k.add_argument("--delta", default="0")
    k.add_argument("--params", default=None, help="the mechanism's parameters as a JSON object")
    k.add_argument("--runs", type=int, default=2, help="refits with the target pairs in or out (more: tighter, slower)")
    k.add_argument("--pairs", type=int, default=None, help="target pairs per refit (the most vulnerable records)")
    k.add_argument("--seconds", type=float, default=None, help="time budget (the check's first 10 refits run past it)")
    k.add_argument("--no-shadow", action="store_true", help="skip the shadow-model attack (saves one refit)")
    k.add_argument(
        "--check-runs",
        type=int,
        default=None,
        help="measure-only refits for the implementation check (default: 10 per refit; 0: none)",
    )
    k.add_argument("--confidence", type=float, default=0.95, help="of the epsilon lower bounds")
    k.add_argument("--max-rows", type=int, default=10_000, help="records used (a random sample beyond)")
    k.add_argument(
        "--no-noise-off-control",
        action="store_true",
        help="skip the control refit with the noise switched off (saves one fit)",
    )
    k.add_argument("--seed", type=int, default=None, help="TESTS ONLY: seeded non-secure noise")
    k.add_argument("--pretty", action="store_true", help="indented JSON")
    return p


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    handlers = {
        "list": cmd_list,
        "schema": cmd_schema,
        "synthesize": cmd_synthesize,
        "evaluate": cmd_evaluate,
        "recommend": cmd_recommend,
        "risk": cmd_risk,
        "tables": cmd_tables,
    }
    try:
        return handlers[args.command](args)
    except (CLIError, ValueError, ArithmeticError, SchemaError, SchemaMismatch, KeyError, RuntimeError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
