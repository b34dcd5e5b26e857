"""Streaming a CSV upload into private storage, with limits checked while reading.

Order of work, so that a refused upload leaves nothing behind:
1. copy the request's file in chunks to a temporary file under ``UPLOAD_DIR/tmp`` (size limit);
2. sniff the encoding (UTF-8 with or without BOM, else Windows-1252) and the delimiter;
3. one streaming pass with no Python loop per record (``inspect_csv``: numpy on the bytes of a file
   without quotes, the csv module's C loop otherwise): header, ragged rows, columns, rows, field length,
   and a uniform random sample of rows for the draft
   (at most ``DPPORTAL_DRAFT_SAMPLE_ROWS`` rows and ``DPPORTAL_DRAFT_SAMPLE_CELLS`` cells, so the web process
   holds a bounded sample whatever the file's size); an irregular file is read again record by record to
   name its first bad row;
4. a schema DRAFT from that sample: suggestions only, steward-only;
5. move the file to its final name and create the Dataset row (file removed again on failure).
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import math
import os
import re
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from django.conf import settings
from django.db import transaction

from dpportal import storage
from dpportal.private import private_file
from mechanisms.draft import RARE_K, draft_schema, rare_categories
from mechanisms.schema import DEFAULT_MISSING_MARKERS, SchemaError, check_header, check_text
from mechanisms.source import read_raw_csv

from .models import Dataset

CHUNK = 1024 * 1024  # copy/read granularity
SNIFF_BYTES = 64 * 1024  # sample size for encoding and delimiter sniffing
DELIMITERS = ",;\t|"
ENCODINGS = ("utf-8-sig", "cp1252")  # tried in order; utf-8-sig also reads plain UTF-8


class UploadError(ValueError):
    """A refused upload, with a message naming the problem for the steward."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_rows: int
    max_columns: int
    max_field_length: int

    @classmethod
    def from_settings(cls) -> "Limits":
        return cls(
            settings.DPPORTAL_MAX_UPLOAD_BYTES,
            settings.DPPORTAL_MAX_ROWS,
            settings.DPPORTAL_MAX_COLUMNS,
            settings.DPPORTAL_MAX_FIELD_LENGTH,
        )


@dataclass(frozen=True)
class Inspection:
    encoding: str
    delimiter: str
    header: list[str]
    n_rows: int
    sample: pd.DataFrame | None = None  # the draft's uniform random sample of rows, every cell as text


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def text_field(value: str, what: str) -> str:
    """NUL and control characters refused with a message (PostgreSQL cannot store NUL: a 500 there)."""
    try:
        return check_text(value, what)
    except SchemaError as exc:
        raise UploadError(str(exc)) from None


def parse_markers(text: str | list | None, *, empty_is_missing: bool = True) -> list[str]:
    """'?, NA' -> ['', '?', 'NA'] (the empty cell counts as missing unless switched off)."""
    if text is None:
        return list(DEFAULT_MISSING_MARKERS)
    if not isinstance(text, (str, list)):
        raise UploadError(f"missing-value markers must be text like '?, NA', got {type(text).__name__}")
    items = text if isinstance(text, list) else text.split(",")
    markers = [str(m).strip() for m in items]
    out = [""] if empty_is_missing else []
    for m in markers:
        if len(m) > 50:
            raise UploadError(f"a missing-value marker may be at most 50 characters, got {m[:60]!r}")
        text_field(m, "the missing-value marker")
        if m and m not in out:
            out.append(m)
    if "" in markers and "" not in out:
        out.insert(0, "")
    return out


def take_limited(fileobj, dest: Path, max_bytes: int) -> int:
    """Put the upload at ``dest``: Django's spooled temporary file is renamed there (it is already on disk in
    ``uploads/tmp``: no second copy, so an upload needs its size on disk once); anything else is copied."""
    path = getattr(fileobj, "temporary_file_path", None)
    if path is None or os.stat(path()).st_dev != os.stat(dest.parent).st_dev:
        return copy_limited(fileobj, dest, max_bytes)
    size = os.path.getsize(path())
    if size > max_bytes:
        raise UploadError(f"the file is larger than the upload limit of {_mb(max_bytes)}")
    if size == 0:
        raise UploadError("the file is empty")
    os.replace(path(), dest)
    return size


def copy_limited(fileobj, dest: Path, max_bytes: int) -> int:
    size = 0
    with open(dest, "wb") as out:
        chunks = fileobj.chunks(CHUNK) if hasattr(fileobj, "chunks") else iter(lambda: fileobj.read(CHUNK), b"")
        for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise UploadError(f"the file is larger than the upload limit of {_mb(max_bytes)}")
            out.write(chunk)
    if size == 0:
        raise UploadError("the file is empty")
    return size


# Compressed or archive formats renamed to .csv (a "zip bomb" never gets decompressed: refused on sight)
ARCHIVE_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"\x28\xb5\x2f\xfd": "zstd",
}
# A valid UTF-8 multi-byte sequence: seen in a file that is not valid UTF-8 as a whole, it means
# the file mixes encodings (decoding it all as Windows-1252 would silently garble those cells).
UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def sniff_encoding(path: Path) -> str:
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    for magic, kind in ARCHIVE_MAGIC.items():
        if head.startswith(magic):
            raise UploadError(f"the file is a {kind} archive, not a CSV text file: upload the uncompressed CSV")
    if b"\x00" in head:
        raise UploadError("the file contains NUL bytes: it looks binary (or UTF-16), not a CSV text file")
    for enc in ENCODINGS:
        decoder = codecs.getincrementaldecoder(enc)()
        try:
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(CHUNK), b""):
                    if b"\x00" in chunk:
                        raise UploadError("the file contains NUL bytes: it looks binary, not a CSV text file")
                    decoder.decode(chunk)
                decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            continue
        if enc != "utf-8-sig" and _has_utf8_sequences(path):
            raise UploadError(
                "the file mixes encodings: some cells are UTF-8, others are not; save the whole file as UTF-8 CSV"
            )
        return enc
    raise UploadError("the file is neither UTF-8 nor Windows-1252 text: save it as UTF-8 CSV")


def _has_utf8_sequences(path: Path) -> bool:
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            if UTF8_MULTIBYTE.search(chunk):
                return True
    return False


def sniff_delimiter(path: Path, encoding: str) -> str:
    with open(path, encoding=encoding, newline="") as fh:
        sample = fh.read(SNIFF_BYTES)
    if "\n" in sample and len(sample) == SNIFF_BYTES:
        sample = sample[: sample.rfind("\n")]
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        first = sample.split("\n", 1)[0]
        counts = {d: first.count(d) for d in DELIMITERS}
        best = max(counts, key=counts.get)
        return best if counts[best] > 0 else ","


SEGMENT_RECORDS = 1_000_000  # records counted between two checks of the running tallies (fast pass)


def inspect_csv(path: Path, limits: Limits, rng: np.random.Generator | None = None) -> Inspection:
    """Encoding, delimiter, header, row count and the draft's sample, with every limit checked.

    One pass with no Python loop per record: a file without quote characters is scanned as bytes with
    numpy (:func:`_scan_unquoted`); otherwise the csv module's C loop does the per-record work
    (``Counter(map(len, reader))`` tallies the records' field counts, the module's field-size limit refuses
    a field over ``max_field_length``). Either way the draft's uniform sample is drawn as the records go by
    (:func:`_scan_unquoted`, :func:`_sample_and_count`). Any irregular
    record (a field count other than the header's, an over-long field, a CSV error) sends the file to
    :func:`_first_problem`, the record-by-record reading that names the first bad row; a regular file over
    the row limit is refused once the tally passes it."""
    encoding = sniff_encoding(path)
    delimiter = sniff_delimiter(path, encoding)
    csv.field_size_limit(limits.max_field_length)
    with open(path, encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
        try:
            header = _read_header(reader, limits)
        except csv.Error as exc:
            raise _csv_problem(exc, reader, limits, row=None) from None
    k = draft_rows(len(header))
    scanned = _scan_unquoted(path, encoding, delimiter, len(header), limits, k, rng)
    if scanned is not None:
        counts, sample = scanned
        read_kw = {"encoding": encoding, "sep": delimiter, "skipinitialspace": True}  # the file's own lines
    else:
        with open(path, encoding=encoding, newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
            next(reader)
            try:
                counts, sample = _sample_and_count(reader, len(header), limits, k, rng)
                read_kw = {"encoding": "utf-8", "sep": ",", "skipinitialspace": False}  # csv.writer's lines
            except csv.Error:
                counts, sample = None, None
    if counts is None or set(counts) - {0, len(header)}:
        _first_problem(path, encoding, delimiter, limits)  # raises UploadError naming the first bad row
        raise UploadError("the file is not valid CSV")  # not reached: the slow reading found the problem
    n_rows = counts[len(header)]
    if n_rows > limits.max_rows:
        raise UploadError(f"the file has more than {limits.max_rows:,} data rows (the row limit)")
    if n_rows == 0:
        raise UploadError("the file has a header but no data rows")
    try:
        sample = sample_frame(sample, len(header), **read_kw)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UploadError(f"the file could not be parsed as CSV: {str(exc).splitlines()[0]}") from None
    sample.columns = header
    return Inspection(encoding=encoding, delimiter=delimiter, header=header, n_rows=n_rows, sample=sample)


def sample_frame(data: bytes, width: int, **read_kw) -> pd.DataFrame:
    """The sampled records (CSV lines, encoded) as text cells, read as the mechanisms read the file
    (read_raw_csv; its parser shares one string object among a column's equal cells: about half the memory
    of the csv module's rows; given bytes, not text, it holds no second copy of them)."""
    if not data.strip():
        return pd.DataFrame(columns=list(range(width)), dtype=object)
    return read_raw_csv(io.BytesIO(data), header=None, names=list(range(width)), **read_kw)


SCAN_BLOCK = 2 * 1024 * 1024  # bytes of the file held at once by the unquoted scan (~20x that at the peak)


def _scan_unquoted(path: Path, encoding: str, delimiter: str, width: int, limits: Limits, k: int, rng):
    """The fast pass of a file without quote characters, on its bytes with numpy: every line is a record,
    its fields are its delimiters plus one (the delimiter, the quote, CR and LF are single bytes in both
    accepted encodings, and no other byte of a UTF-8 text equals them). Returns ``(tally, sample)`` as
    :func:`_sample_and_count` does, or None where only the csv module can tell (a quote, a lone CR, or a
    field of more than ``max_field_length`` bytes, which may still be within the limit in characters).
    The sample is a bottom-k sample: each record gets a uniform key and the ``k`` smallest keys are kept
    (the draft's suggestions only: numpy's generator, see :func:`_sample_and_count`)."""
    rng = rng if rng is not None else np.random.default_rng()
    sep, quote = ord(delimiter), ord('"')
    keys, pos = np.empty(0), np.empty(0, dtype=np.int64)  # the kept records' keys and record numbers
    lines: list[bytes] = []
    n_rows = 0
    carry = b""
    first = True
    with open(path, "rb") as fh:
        while True:
            block = fh.read(SCAN_BLOCK)
            buf = carry + block
            if not block:
                if not buf:
                    break
                buf += b"\n"  # the last line, without its newline
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                carry = buf
                continue
            carry, buf = buf[cut:], buf[:cut]
            r = np.frombuffer(buf, dtype=np.uint8)
            if (r == quote).any():
                return None
            cr = np.flatnonzero(r == 13)
            if len(cr) and (r[cr + 1] != 10).any():
                return None  # a lone CR ends a record for the csv module
            nl = np.flatnonzero(r == 10)
            starts = np.concatenate(([0], nl[:-1] + 1))
            ends = nl - (r[np.maximum(nl - 1, 0)] == 13) * (nl > starts)
            fields = np.add.reduceat(r == sep, starts, dtype=np.int32) + 1  # a line's delimiters, plus one
            if first:  # the header, read by the csv module
                starts, ends, fields, first = starts[1:], ends[1:], fields[1:], False
            if len(starts) and int((ends - starts).max()) > limits.max_field_length:  # a field may be too long
                marks = np.flatnonzero((r == sep) | (r == 10) | (r == 13))
                if int(np.diff(marks, prepend=-1).max()) - 1 > limits.max_field_length:
                    return None
            data = ends > starts  # an empty line is no record (the csv module skips it)
            if (fields[data] != width).any():
                return Counter({0: 1, -1: 1}), b""  # an irregular record: named by _first_problem
            starts, ends = starts[data], ends[data]
            new = rng.random(len(starts))
            pick = np.flatnonzero(new < (keys.max() if len(keys) >= k else np.inf))
            if len(pick):
                keys, pos = _keep_smallest(keys, pos, lines, new[pick], n_rows + pick, buf, starts, ends, pick, k)
            n_rows += len(starts)
            if n_rows > limits.max_rows:
                return Counter({width: n_rows}), b""
    return Counter({width: n_rows}), b"\n".join(lines[i] for i in np.argsort(pos).tolist())


def _keep_smallest(keys, pos, lines, new_keys, new_pos, buf, starts, ends, pick, k):
    """The reservoir after a block: of the kept records and the block's candidates, the ``k`` with the
    smallest keys; a candidate that gets in takes a leaving record's slot (``lines`` changed in place)."""
    every = np.concatenate((keys, new_keys))
    win = np.argpartition(every, k - 1)[:k] if len(every) > k else np.arange(len(every))
    held = len(keys)
    entering = win[win >= held] - held
    leaving = np.ones(held, dtype=bool)
    leaving[win[win < held]] = False
    slots = np.concatenate((np.flatnonzero(leaving), np.arange(held, len(win))))
    keys = np.concatenate((keys, np.empty(len(win) - held)))
    pos = np.concatenate((pos, np.empty(len(win) - held, dtype=np.int64)))
    lines.extend([b""] * (len(win) - held))
    keys[slots], pos[slots] = new_keys[entering], new_pos[entering]
    at = pick[entering]
    for slot, a, b in zip(slots.tolist(), starts[at].tolist(), ends[at].tolist()):
        lines[slot] = buf[a:b]
    return keys, pos


def _read_header(reader, limits: Limits) -> list[str]:
    header = next(reader, None)
    if not header or all(not h.strip() for h in header):
        raise UploadError("the file has no header row (the first line must name the columns)")
    header = [h.strip() for h in header]
    _check_header(header, limits)
    return header


def _sample_and_count(reader, width: int, limits: Limits, k: int, rng: np.random.Generator | None):
    """The tally of field counts over every record (``{fields: records}``; blank lines are records of 0
    fields) and a uniform random sample of ``k`` records, in one pass (Li's reservoir "Algorithm L": the
    records between two kept ones are skipped in C by ``islice``, so the Python loop turns about
    k (1 + ln(N / k)) times, not N). Stops early (returning the tally so far) once a record is irregular
    or the data rows pass the row limit: the caller names the problem.

    The sample feeds the schema DRAFT only (suggestions the steward must confirm as public knowledge; no
    mechanism reads it), so it uses numpy's generator, not the OpenDP samplers of mechanisms/noise.py."""
    rng = rng if rng is not None else np.random.default_rng()

    def uniform() -> float:  # in (0, 1]: its logarithm is finite
        return 1.0 - rng.random()

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="")

    def line(row: list[str]) -> str:  # a kept record as one CSV line (one string, not one per cell)
        out.seek(0)
        out.truncate()
        writer.writerow(row)
        return out.getvalue()

    counts: Counter = Counter()
    sample: list[str] = []
    while len(sample) < k:
        want = min(10_000, k - len(sample))
        rows = list(itertools.islice(reader, want))
        counts.update(map(len, rows))
        sample += [line(r) for r in rows]
        if len(rows) < want or set(counts) - {0, width} or counts[width] > limits.max_rows:
            return counts, "\n".join(sample).encode()
    w = math.exp(math.log(uniform()) / k)
    while True:
        skip = int(math.log(uniform()) / math.log1p(-w)) if w < 1.0 else 0
        while skip > 0:  # the skipped records are counted in segments, the tallies checked between them
            step = min(skip, SEGMENT_RECORDS)
            before = counts.total()
            counts.update(map(len, itertools.islice(reader, step)))
            if counts.total() - before < step or set(counts) - {0, width} or counts[width] > limits.max_rows:
                return counts, "\n".join(sample).encode()  # the end of the file, or a problem to name
            skip -= step
        row = next(reader, None)
        if row is None or (len(row) != width and row):
            counts.update([len(row)] if row is not None else [])
            return counts, "\n".join(sample).encode()
        counts[len(row)] += 1
        sample[int(rng.integers(k))] = line(row)
        w *= math.exp(math.log(uniform()) / k)


def _csv_problem(exc: csv.Error, reader, limits: Limits, *, row: int | None) -> UploadError:
    where = f"row {row} (line {reader.line_num})" if row is not None else f"line {reader.line_num}"
    if "field larger than field limit" in str(exc):
        return UploadError(f"{where} has a field longer than the limit of {limits.max_field_length:,} characters")
    return UploadError(f"the file is not valid CSV near line {reader.line_num}: {exc}")


def _first_problem(path: Path, encoding: str, delimiter: str, limits: Limits) -> None:
    """Read record by record to the first bad one and raise its UploadError (an irregular file only)."""
    csv.field_size_limit(limits.max_field_length)
    n_rows = 0
    with open(path, encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
        try:
            width = len(_read_header(reader, limits))
        except csv.Error as exc:
            raise _csv_problem(exc, reader, limits, row=None) from None
        try:
            for row in reader:
                if not row:
                    continue  # blank line (pandas skips them too)
                n_rows += 1
                if len(row) != width:
                    raise UploadError(
                        f"row {n_rows} (line {reader.line_num}) has {len(row)} fields, "
                        f"the header has {width}: every row needs the same number of fields"
                    )
                if n_rows > limits.max_rows:
                    raise UploadError(f"the file has more than {limits.max_rows:,} data rows (the row limit)")
        except csv.Error as exc:
            raise _csv_problem(exc, reader, limits, row=n_rows + 1) from None


def _check_header(header: list[str], limits: Limits) -> None:
    if len(header) > limits.max_columns:
        raise UploadError(f"the file has {len(header):,} columns; the limit is {limits.max_columns:,}")
    try:
        check_header(header)
    except SchemaError as exc:
        raise UploadError(str(exc)) from None


def draft_rows(columns: int) -> int:
    """Rows read to draft the schema: the row setting, capped by the cell setting for wide files."""
    return max(1, min(settings.DPPORTAL_DRAFT_SAMPLE_ROWS, settings.DPPORTAL_DRAFT_SAMPLE_CELLS // max(1, columns)))


def draft_for(path: Path, info: Inspection, markers: list[str]) -> dict:
    """The schema DRAFT from the inspection's uniform sample of rows (suggestions only, steward-only)."""
    try:
        head = read_raw_csv(path, nrows=1, encoding=info.encoding, sep=info.delimiter)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UploadError(f"the file could not be parsed as CSV: {str(exc).splitlines()[0]}") from None
    if list(head.columns) != info.header:
        raise UploadError("the header could not be read consistently (check quoting in the first line)")
    raw = info.sample
    try:
        draft = draft_schema(raw, missing_markers=markers)
        return {**draft.to_dict(), "rare_categories": rare_categories(raw, draft), "rare_k": RARE_K}
    except SchemaError as exc:
        raise UploadError(str(exc)) from None


def store_upload(fileobj, *, owner, name: str, markers: list[str], limits: Limits | None = None) -> Dataset:
    """Validate and store an uploaded CSV; returns the new Dataset. Raises UploadError (and leaves
    nothing in storage) when the file is refused."""
    limits = limits or Limits.from_settings()
    name = (name or "").strip()
    original = os.path.basename(str(getattr(fileobj, "name", "") or "upload.csv")).replace("\x00", "")[:255]
    if not name:
        name = os.path.splitext(original)[0] or "dataset"
    if len(name) > 200:
        raise UploadError(f"the name may be at most 200 characters, got {len(name)}")
    original = re.sub("[\x00-\x1f\x7f]", "", original) or "upload.csv"
    text_field(name, "the dataset name")
    upload_dir = Path(settings.UPLOAD_DIR)
    (upload_dir / "tmp").mkdir(parents=True, exist_ok=True)
    key = uuid.uuid4().hex
    tmp = upload_dir / "tmp" / f"{key}.part"
    final = upload_dir / f"{key}.csv"
    try:
        size = take_limited(fileobj, tmp, limits.max_bytes)
        info = inspect_csv(tmp, limits)
        draft = draft_for(tmp, info, markers)
        os.replace(tmp, final)
        private_file(final)  # 0600 whatever the process's umask (dpportal/private.py)
        storage.publish(final)  # to the object store, when one is configured (dpportal/storage.py)
        with transaction.atomic():
            return Dataset.objects.create(
                owner=owner,
                name=name,
                original_filename=original,
                file_path=str(final.relative_to(settings.DATA_DIR)),
                file_size=size,
                encoding=info.encoding,
                delimiter=info.delimiter,
                n_rows=info.n_rows,
                header=info.header,
                missing_markers=markers,
                schema_draft=draft,
                draft_source="data",
            )
    except BaseException:
        for p in (tmp, final):
            p.unlink(missing_ok=True)
        if storage.remote():
            storage.delete(storage.key_for(final))
        raise
