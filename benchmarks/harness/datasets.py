"""Where the benchmark datasets are: DPPORTAL_DATASETS_DIR, default ``../shared/datasets`` beside the
repository. They are optional (tests and docs use the small tables in samples/); a benchmark that needs
one calls :func:`dataset_path`, which stops with a message naming the folder and the variable."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = ROOT.parent / "shared" / "datasets"
ENV = "DPPORTAL_DATASETS_DIR"


class DatasetsMissing(FileNotFoundError):
    """A benchmark dataset is not where DPPORTAL_DATASETS_DIR (or the default) says."""


def datasets_dir() -> Path:
    return Path(os.environ.get(ENV) or DEFAULT_DIR).expanduser().resolve()


def dataset_path(file_name: str, folder: Path | None = None) -> Path:
    """The path of one benchmark CSV (in ``folder``, default :func:`datasets_dir`), or DatasetsMissing
    with a message saying how to provide it."""
    path = (folder or datasets_dir()) / file_name
    if not path.is_file():
        raise DatasetsMissing(
            f"benchmark dataset {file_name!r} not found at {path}: set {ENV} to the folder holding the "
            f"shared datasets (see docs/operations.md, 'Benchmark datasets'); tests need only samples/"
        )
    return path
