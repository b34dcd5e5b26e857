"""The mechanism contract shared by every synthesizer, the CLI, the web app and benchmarks.

A mechanism is built with keyword-only privacy arguments and parameters, then:

1. ``fit(source)`` -- the ONLY step that reads private data. It draws all privacy noise through the
   :class:`~mechanisms.noise.Noise` it was given and keeps a private *summary* (noisy counts, a noisy
   embedding, ...).
2. ``sample(n)`` -- pure post-processing of the summary: any number of rows, at no privacy cost.
3. ``summary()`` / ``from_summary()`` -- the summary as plain arrays + JSON (stored as npz, never
   pickle), so more rows can be drawn later.
4. ``privacy_cost()`` -- the declared :class:`~mechanisms.accounting.PrivacyCost`.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np
import pandas as pd

from . import derive
from .accounting import PrivacyCost, check_delta, check_epsilon, short_repr
from .noise import Noise
from .schema import Schema
from .source import TableSource, cell_dtype, cells_bytes

if TYPE_CHECKING:  # the guidance types read public inputs only; base does not import them at run time
    from .guidance.purposes import Errors, Setting
    from .guidance.runtime import RuntimeModel

ProgressFn = Callable[[float, str], None]  # (fraction in [0,1], stage text)

# Bounds every parameter obeys before its own minimum/maximum (hostile input: a huge JSON integer,
# 1e-400 becoming 0.0, a megabyte of text). Generous for every real use, checked before arithmetic.
MAX_PARAM_CHARS = 200
MAX_PARAM_INT = 10**15
MIN_PARAM_FLOAT, MAX_PARAM_FLOAT = 1e-30, 1e30


@dataclass(frozen=True)
class ParamSpec:
    """One tunable parameter: what the web form and the CLI show and validate."""

    name: str
    type: str  # "int" | "float" | "str" | "bool" | "choice" | "column" | "columns"
    default: Any  # "columns": a comma-separated string ("" for none)
    help: str
    minimum: float | None = None
    maximum: float | None = None  # "columns": the most names
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (e.g. "derive from n, d, epsilon")
    kinds: tuple[str, ...] = ()  # "column" params: the column kinds allowed (empty: any kept column)
    empty_means: str = ""  # what leaving an optional param empty does, when not "the automatic value"

    def to_dict(self) -> dict:
        d = {"name": self.name, "type": self.type, "default": self.default, "help": self.help}
        if self.minimum is not None:
            d["minimum"] = self.minimum
        if self.maximum is not None:
            d["maximum"] = self.maximum
        if self.choices:
            d["choices"] = list(self.choices)
        if self.optional:
            d["optional"] = True
        if self.kinds:
            d["kinds"] = list(self.kinds)
        return d

    def _range_text(self) -> str:
        if self.type == "int":
            return f"+-{MAX_PARAM_INT:.0e}"
        if self.type == "float":
            return f"{MIN_PARAM_FLOAT:g}..{MAX_PARAM_FLOAT:g} in magnitude (or 0)"
        return f"{MAX_PARAM_CHARS} characters"

    def column_choices(self, schema: Schema) -> list[str]:
        """The kept columns a "column" parameter may name (of the allowed kinds)."""
        return [c.name for c in schema.kept if not self.kinds or c.kind in self.kinds]

    def coerce(self, value: Any, schema: Schema | None = None) -> Any:
        """Validate and convert ``value`` (may be a CLI/form string). Raises ValueError naming the param."""
        name = self.name
        empty = ("", "none", "None") + (() if "auto" in self.choices else ("auto",))
        if isinstance(value, str) and len(value) > MAX_PARAM_CHARS:
            raise ValueError(f"parameter {name!r} may be at most {MAX_PARAM_CHARS} characters, got {len(value)}")
        if self.type == "columns":
            return self._columns(self.default if value is None else value, schema)
        if value is None or (isinstance(value, str) and value.strip() in empty):
            if self.optional:
                return None
            if value is None:
                return self.default
            raise ValueError(f"parameter {name!r} needs a value")
        try:
            if self.type == "int":
                if isinstance(value, bool):
                    raise ValueError
                if isinstance(value, float):
                    if not value.is_integer():
                        raise ValueError
                    value = int(value)
                v = int(value) if not isinstance(value, str) else int(value.strip())
                if abs(v) > MAX_PARAM_INT:
                    raise ValueError
            elif self.type == "float":
                if isinstance(value, bool):
                    raise ValueError
                v = float(value)
                if not math.isfinite(v) or (v != 0 and not MIN_PARAM_FLOAT <= abs(v) <= MAX_PARAM_FLOAT):
                    raise ValueError
                if v == 0 and isinstance(value, str) and any(c in "123456789" for c in value.lower().split("e")[0]):
                    raise ValueError  # underflow: "1e-400" is not zero
            elif self.type == "bool":
                if isinstance(value, bool):
                    v = value
                elif str(value).strip().lower() in ("1", "true", "yes", "on"):
                    v = True
                elif str(value).strip().lower() in ("0", "false", "no", "off"):
                    v = False
                else:
                    raise ValueError
            elif self.type in ("str", "choice", "column"):
                if not isinstance(value, str):
                    raise ValueError
                v = value.strip()
            else:  # pragma: no cover - spec bug
                raise AssertionError(self.type)
        except (ValueError, TypeError, OverflowError):  # OverflowError: float() of a huge JSON integer
            raise ValueError(
                f"parameter {name!r} must be of type {self.type} within {self._range_text()}, got {short_repr(value)}"
            ) from None
        if self.minimum is not None and v < self.minimum:
            raise ValueError(f"parameter {name!r} must be >= {self.minimum}, got {name}={v!r}")
        if self.maximum is not None and v > self.maximum:
            raise ValueError(f"parameter {name!r} must be <= {self.maximum}, got {name}={v!r}")
        if self.type == "choice" and v not in self.choices:
            raise ValueError(f"parameter {name!r} must be one of {list(self.choices)}, got {v!r}")
        if self.type == "column" and schema is not None and v not in schema.names:
            raise ValueError(f"parameter {name!r} must name a kept column of the schema, got {v!r}")
        if self.type == "column" and schema is not None and v not in self.column_choices(schema):
            raise ValueError(
                f"parameter {name!r}: {name} must be a {' or '.join(self.kinds)} column, got "
                f"{name}={v!r} of kind {schema.column(v).kind!r}"
            )
        return v

    def _columns(self, value: Any, schema: Schema | None) -> tuple[str, ...]:
        """A "columns" value: a list of names or one comma-separated string (what the CLI and the web form
        send), as a tuple of distinct kept columns of the allowed kinds, at most ``maximum`` of them."""
        name = self.name
        if isinstance(value, str):
            names = [part.strip() for part in value.split(",")]
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            names = [v.strip() for v in value]
        else:
            raise ValueError(
                f"parameter {name!r} must be a list of column names or one comma-separated string, "
                f"got {short_repr(value)}"
            )
        names = [v for v in names if v]
        if self.maximum is not None and len(names) > self.maximum:
            raise ValueError(
                f"parameter {name!r} may name at most {self.maximum:g} columns, got {len(names)}: {short_repr(names)}"
            )
        if len(set(names)) < len(names):
            twice = next(v for i, v in enumerate(names) if v in names[:i])
            raise ValueError(f"parameter {name!r} names the column {short_repr(twice)} twice")
        for v in names:
            if len(v) > MAX_PARAM_CHARS:
                raise ValueError(f"parameter {name!r}: a column name may be at most {MAX_PARAM_CHARS} characters")
            if schema is not None and v not in schema.names:
                raise ValueError(f"parameter {name!r} must name kept columns of the schema, got {v!r}")
            if schema is not None and v not in self.column_choices(schema):
                raise ValueError(
                    f"parameter {name!r}: each column must be of kind {' or '.join(self.kinds)}, got {v!r} of "
                    f"kind {schema.column(v).kind!r}"
                )
        return tuple(names)


TEXT_CELL_BYTES = 80  # one CSV cell held as a Python str in a pandas object column (~50-60) + copies


def table_bytes(schema: Schema, n: int) -> int:
    """Memory of the raw table read whole: every column (kept or not) as text, plus float copies."""
    return int(n) * (len(schema.columns) * TEXT_CELL_BYTES + len(schema.kept) * 8 * 3)


def format_bytes(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


NOISE_MODE = ParamSpec(
    "noise_type",
    "choice",
    "laplace",
    "Noise family: 'laplace' keeps pure epsilon-DP (delta 0); 'gaussian' is accounted in zero-concentrated DP "
    "and needs a delta, but adds far less noise when many columns or tables share the budget (its error grows "
    "with their square root, not linearly)",
    choices=("laplace", "gaussian"),
)


@dataclass(frozen=True)
class NoisyQuery:
    """One linear query a fit released with additive noise, kept for the risk report's implementation
    check (:func:`mechanisms.risk.query_scores`): ``values`` is the sum over the training records x of
    a contribution c(x), plus noise of std ``scale`` ("gaussian") or scale b ("laplace", density
    exp(-|z| / b) / 2b). A record's contribution is either ``weights[cells(x)]`` at the one coordinate
    ``cells(x)`` (a count query: ``cells`` maps the schema's public cell matrix, rows x columns, to one
    coordinate per row; ``weights`` None means 1) or a dense vector (``dense`` maps the prepared frame
    to a rows x len(values) matrix).

    These are the mechanism's DP outputs before any post-processing (its privacy proof is about them),
    and the maps read only the public schema and public draws. They live on the fitted object only:
    never in the summary, never shown to an analyst."""

    values: np.ndarray
    scale: float
    noise: str = "gaussian"
    cells: Callable[[np.ndarray], np.ndarray] | None = None
    weights: np.ndarray | None = None
    dense: Callable[[pd.DataFrame], np.ndarray] | None = None


class Mechanism:
    """Base class. Subclasses set the class attributes and implement ``_fit``, ``sample``,
    ``summary`` / ``_load_summary`` and ``privacy_cost``."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    supported_kinds: ClassVar[frozenset[str]] = frozenset({"continuous", "integer", "categorical"})
    needs_delta: ClassVar[bool] = False  # always (epsilon, delta)-DP
    gaussian_mode: ClassVar[bool] = False  # offers noise="gaussian" (zCDP, needs a delta); pure by default
    streaming: ClassVar[bool] = False  # reads the source only through chunks()
    # Reads the source only through cells() (chunked encoding) and then holds this many CellTable copies
    # of it (cells and columns in the compact cell type each); None: reads frame(), the whole table as text.
    cell_tables: ClassVar[int | None] = None
    # The model puts no probability on records that break a rule (structural zeros), so generation
    # redraws almost nothing: the draw plan (mechanisms.rules.draw_plan) then expects no rejection.
    rules_in_model: ClassVar[bool] = False
    params: ClassVar[tuple[ParamSpec, ...]] = ()

    # -- public-input guidance: declared by each mechanism's home (its package's guide.py), read by
    # mechanisms.guidance. None (or the base method) means "not declared": registry.get refuses such a
    # mechanism (missing_parts), so a new one cannot be half wired in.
    # A mechanism whose guide.py uses the standard names sets ``guide = <that module>``: predict_accuracy,
    # near_uniform, RUNTIME, STEWARD_HELP and MEASURED_TSTR are then bound below (__init_subclass__).
    guide: ClassVar[ModuleType | None] = None
    runtime_model: ClassVar["RuntimeModel | None"] = None  # seconds = a + b x work, its work measure, any range
    steward_help: ClassVar[dict[str, str] | None] = None  # parameter -> what it changes for the steward
    tstr_measured: ClassVar[dict | None] = None  # {(variant, epsilon): {table: (TSTR AUC, real AUC)}}; {}: none yet
    speed_rank: ClassVar[int | None] = None  # position in the measured release-time order (ties go to the faster)
    # "train a model": "conditional" models the other columns given the target (with target_params, described
    # by target_how, "{t}" standing for the target), "joint" the table as a whole, "independent" every column
    # on its own (a model trained on it learns nothing)
    target_structure: ClassVar[str] = ""
    target_params: ClassVar[dict] = {}
    target_how: ClassVar[str] = ""

    _GUIDE_NAMES: ClassVar[dict[str, str]] = {
        "predict_accuracy": "predict_accuracy",
        "near_uniform": "near_uniform",
        "runtime_model": "RUNTIME",
        "steward_help": "STEWARD_HELP",
        "tstr_measured": "MEASURED_TSTR",
    }

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        home = cls.__dict__.get("guide")
        for attr, name in cls._GUIDE_NAMES.items() if home is not None else ():
            if attr not in cls.__dict__ and hasattr(home, name):
                value = getattr(home, name)
                setattr(cls, attr, staticmethod(value) if callable(value) else value)
        if "__init__" in cls.__dict__:  # built on the schema it models, without derived columns (mechanisms.derive)
            cls.__init__ = _modelling(cls.__dict__["__init__"])
        if "sample" in cls.__dict__:  # rows of the modelled columns, then the derived ones
            cls.sample = _completing(cls.__dict__["sample"])

    def __init__(
        self,
        schema: Schema,
        *,
        epsilon: float,
        delta: float = 0.0,
        noise: Noise | None = None,
        progress: ProgressFn | None = None,
        **params,
    ):
        if schema.draft:
            raise ValueError("the schema is a draft: the steward must confirm it before a release")
        # The confirmed schema; the mechanism models it without the columns its derive rules compute
        # (a per-record projection, mechanisms.derive), and sample() adds them to the generated rows.
        self.release_schema = self.__dict__.get("release_schema", schema)
        schema = derive.model_schema(schema)
        self.check_schema(schema)
        self.schema = schema
        self.epsilon = check_epsilon(epsilon)
        self.params = self.validate_params(params, schema)
        required = self.requires_delta(self.params)
        try:
            self.delta = check_delta(delta, required=required)
        except ValueError as exc:
            if self.gaussian_mode and not required:
                raise ValueError(f"{exc}; choose noise_type='gaussian' (zCDP) to spend a delta") from None
            raise
        self.noise = noise if noise is not None else Noise.secure_backend()
        self._progress = progress
        self.fitted = False

    # -- contract ---------------------------------------------------------------------------------
    @classmethod
    def check_schema(cls, schema: Schema) -> None:
        bad = sorted(schema.kinds - cls.supported_kinds)
        if bad:
            raise ValueError(f"mechanism {cls.name!r} does not support column kind(s) {bad}")

    @classmethod
    def requires_delta(cls, params: dict) -> bool:
        """Whether this configuration is (epsilon, delta)-DP and so needs a positive delta."""
        return cls.needs_delta or (cls.gaussian_mode and params.get("noise_type") == "gaussian")

    @classmethod
    def validate_params(cls, raw: dict, schema: Schema | None = None) -> dict:
        specs = {p.name: p for p in cls.params}
        unknown = sorted(set(raw) - set(specs))
        if unknown:
            raise ValueError(f"unknown parameter(s) for {cls.name!r}: {unknown}; known: {sorted(specs)}")
        return {name: spec.coerce(raw.get(name), schema) for name, spec in specs.items()}

    @classmethod
    def describe(cls) -> dict:
        params = [{**p.to_dict(), "steward_help": cls.help(p.name)} for p in cls.params]
        return {
            "name": cls.name,
            "title": cls.title,
            "paper": cls.paper,
            "supported_kinds": sorted(cls.supported_kinds),
            "needs_delta": cls.needs_delta,
            "gaussian_mode": cls.gaussian_mode,
            "streaming": cls.streaming,
            "params": params,
        }

    @classmethod
    def advice(cls, schema: Schema) -> list[str]:
        """Warnings about this mechanism's expected utility on ``schema`` (public facts only: column
        kinds and counts), shown on the release form. They refuse nothing; the default has none."""
        return []

    # -- public-input guidance (no data; see the class attributes above) ----------------------------
    @classmethod
    def predict_accuracy(cls, setting: "Setting", params: dict) -> "Errors | None":
        """Expected 1-way and 2-way TVD for the public ``setting`` and ``params`` (modelled noise and
        stated priors); None where the mechanism has no accuracy model (say so explicitly)."""
        raise NotImplementedError

    @classmethod
    def near_uniform(cls, setting: "Setting") -> str | None:
        """Why the output is predicted near-uniform for ``setting`` (a measured failure), or None."""
        raise NotImplementedError

    @classmethod
    def help(cls, param: str) -> str:
        """The steward-facing help of one parameter: what it changes in accuracy, time and memory."""
        return (cls.steward_help or {}).get(param, "")

    @classmethod
    def memory_parts(cls, schema: Schema, n: int, epsilon: float, params: dict) -> list[dict]:
        """The memory estimate by part ({"part", "what", "bytes", "chunk_rows"}) where the mechanism
        plans its memory in parts; none where its estimate is one figure (planned_memory_bytes)."""
        return []

    @classmethod
    def missing_parts(cls) -> list[str]:
        """The guidance parts this mechanism does not declare (empty for a complete home)."""
        missing = [
            m
            for m in ("predict_accuracy", "near_uniform")
            if next(k for k in cls.__mro__ if m in k.__dict__) is Mechanism
        ]
        missing += [
            a for a in ("runtime_model", "steward_help", "tstr_measured", "speed_rank") if getattr(cls, a) is None
        ]
        if cls.target_structure not in ("conditional", "joint", "independent"):
            missing.append("target_structure")
        elif cls.target_structure == "conditional" and "{t}" not in cls.target_how:
            missing.append("target_how")
        missing += [f"steward_help[{p.name}]" for p in cls.params if not cls.help(p.name)]
        return missing

    def check_plan(self, n: int) -> None:
        """Refuse, BEFORE any budget is reserved or data read, parameters that cannot work for the
        public row count ``n`` (raises ValueError naming the problem). Mechanisms whose defaults
        depend on n override this; the default accepts everything."""

    def planned_memory_bytes(self, n: int) -> int:
        """A conservative estimate of the job's peak memory for the public row count ``n``, from the
        schema and the parameters only (no data). The default counts the raw table held as text
        (``TEXT_CELL_BYTES`` per cell, all columns) for mechanisms that read it whole; streaming
        mechanisms read chunks. Mechanisms with large working arrays add theirs."""
        if self.streaming:
            return 0
        if self.cell_tables is not None:
            per_table = 2 * int(n) * len(self.schema.kept) * cell_dtype(self.schema).itemsize  # cells + columns
            return cells_bytes(self.schema, n) + self.cell_tables * per_table
        return table_bytes(self.schema, n)

    def check_memory(self, n: int, limit_bytes: int | None) -> None:
        """Refuse, BEFORE any budget is reserved, a plan whose memory estimate exceeds the limit
        (e.g. DP-MERF on 100,000 categories asked for 74.5 GiB inside fit, after the budget was spent)."""
        if limit_bytes is None:
            return
        need = int(self.planned_memory_bytes(int(n)))
        if need > limit_bytes:
            raise ValueError(
                f"{self.name} would need about {format_bytes(need)} of memory for n={int(n):,} rows "
                f"with this schema and these parameters; the memory limit per job is "
                f"{format_bytes(limit_bytes)}: reduce the categories, columns or parameters"
            )

    def fit(self, source: TableSource) -> "Mechanism":
        if self.fitted:
            raise RuntimeError("fit() may run once per mechanism object (each fit spends budget)")
        self._fit(self._modelled_source(source))
        self.fitted = True
        return self

    def _fit(self, source: TableSource) -> None:
        raise NotImplementedError

    def sample(self, n: int) -> pd.DataFrame:
        raise NotImplementedError

    def privacy_cost(self) -> PrivacyCost:
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """Private summary as {name: numpy array | JSON-able value}. Post-processing only from here."""
        raise NotImplementedError

    def _load_summary(self, summary: dict[str, Any]) -> None:
        raise NotImplementedError

    def measure(self, source: TableSource) -> list[NoisyQuery] | None:
        """The risk report's implementation check: the fit's private measurements alone, on the same
        code path and noise, returned as :meth:`noisy_queries`. A mechanism whose post-processing is
        costly (a generator's training) skips it here; by default this is the whole ``fit``. Reads
        private data like ``fit`` and spends like it; the object may not ``sample`` unless fitted."""
        if self.fitted or self.noisy_queries() is not None:
            raise RuntimeError("fit() or measure() may run once per mechanism object (each spends budget)")
        self._measure_only(self._modelled_source(source))
        return self.noisy_queries()

    def _modelled_source(self, source: TableSource) -> TableSource:
        """``source`` read through the schema this mechanism models: a column a derive rule computes is
        excluded there, so no reader of the source (``frame``, ``chunks``, ``cells``) ever encodes it."""
        if source.schema is self.schema or source.schema == self.schema:
            return source
        return TableSource(self.schema, frame=source._frame, path=source._path, n=source.n, read_kw=source._read_kw)

    def _measure_only(self, source: TableSource) -> None:
        """The measuring part of ``fit``, setting what :meth:`noisy_queries` returns (default: all of it)."""
        self.fit(source)

    def noisy_queries(self) -> list[NoisyQuery] | None:
        """The noisy linear queries the last ``fit`` released (:class:`NoisyQuery`), or None when this
        mechanism does not describe its measurements that way (the risk report then says its
        implementation check is not available)."""
        return getattr(self, "_noisy_queries", None)

    def report(self) -> dict:
        """Extra public facts for the privacy report (e.g. achieved LP error, tree size)."""
        return {}

    @classmethod
    def from_summary(
        cls,
        schema: Schema,
        summary: dict,
        *,
        epsilon: float,
        delta: float = 0.0,
        params: dict | None = None,
        noise: Noise | None = None,
    ) -> "Mechanism":
        mech = cls(schema, epsilon=epsilon, delta=delta, noise=noise, **(params or {}))
        mech._load_summary(summary)
        mech.fitted = True
        return mech

    # -- helpers ------------------------------------------------------------------------------------
    def progress(self, fraction: float, stage: str) -> None:
        if self._progress is not None:
            self._progress(min(max(float(fraction), 0.0), 1.0), stage)

    def _check_rows(self, n: int) -> int:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"number of rows must be a positive integer, got rows={n!r}")
        if not self.fitted:
            raise RuntimeError("sample() needs fit() (or from_summary()) first")
        return int(n)


def _modelling(init: Callable[..., None]) -> Callable[..., None]:
    """A mechanism's ``__init__`` handed the schema it models (:func:`mechanisms.derive.model_schema`), so
    that its own code never sees a derived column; the confirmed schema is kept as ``release_schema``."""

    @functools.wraps(init)
    def modelled(self, *args, **kwargs) -> None:
        schema, args = (args[0], args[1:]) if args else (kwargs.pop("schema"), args)
        self.__dict__.setdefault("release_schema", schema)
        init(self, derive.model_schema(schema), *args, **kwargs)

    return modelled


def _completing(sample: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """A mechanism's ``sample`` followed by the columns its schema's derive rules compute from the
    generated ones (post-processing, :func:`mechanisms.derive.complete`)."""

    @functools.wraps(sample)
    def completed(self, n, *args, **kwargs) -> pd.DataFrame:
        rows = sample(self, n, *args, **kwargs)
        schema = getattr(self, "release_schema", None)
        return rows if schema is None or schema is self.schema else derive.complete(schema, rows)

    return completed


# ----------------------------------------------------------------------------------------------
# Summary storage: npz with a JSON entry, never pickle
# ----------------------------------------------------------------------------------------------


def save_summary(summary: dict[str, Any], fh) -> None:
    arrays = {k: v for k, v in summary.items() if isinstance(v, np.ndarray)}
    meta = {k: v for k, v in summary.items() if not isinstance(v, np.ndarray)}
    for k, a in arrays.items():
        if a.dtype == object:
            raise TypeError(f"summary array {k!r} has dtype object; store strings in the JSON part")
    np.savez_compressed(fh, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)


def load_summary(fh) -> dict[str, Any]:
    with np.load(fh, allow_pickle=False) as z:
        out = {k: z[k] for k in z.files if k != "__meta__"}
        out.update(json.loads(bytes(z["__meta__"]).decode()))
    return out
