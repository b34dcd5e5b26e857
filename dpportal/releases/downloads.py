"""Downloads of release files, streamed with bounded memory per request.

A download never builds its file in memory: the exact analysis CSV is sent from disk in blocks
(:func:`file_response`), and a variant computed from it (the spreadsheet-safe CSV,
:func:`mechanisms.io.iter_spreadsheet_csv`) is read, transformed and sent a chunk of rows at a time
(:func:`streamed_response`). A request holds at most one block or one chunk (about
``SPREADSHEET_CHUNK_ROWS`` rows) at once, whatever the size of the file, so concurrent downloads of a
large release add little to the web process's memory (``benchmarks/system/download_memory.py``
measures it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from django.http import FileResponse, StreamingHttpResponse

from mechanisms.io import iter_spreadsheet_csv

CSV_TYPE = "text/csv; charset=utf-8"
FILE_BLOCK_BYTES = 256 * 1024  # a block of a file sent as it is


def _attachment(name: str) -> str:
    return f'attachment; filename="{name}"'


def file_response(path: Path, name: str, content_type: str = CSV_TYPE) -> FileResponse:
    """A file sent as it is, in blocks of FILE_BLOCK_BYTES (with its length: the client sees progress)."""
    resp = FileResponse(open(path, "rb"), as_attachment=True, filename=name, content_type=content_type)
    resp.block_size = FILE_BLOCK_BYTES
    return resp


def _encoded(pieces: Iterable[str]) -> Iterator[bytes]:
    for piece in pieces:
        yield piece.encode("utf-8")


def streamed_response(pieces: Iterable[str], name: str, content_type: str = CSV_TYPE) -> StreamingHttpResponse:
    """A file computed piece by piece (text pieces, UTF-8 encoded as they are sent)."""
    resp = StreamingHttpResponse(_encoded(pieces), content_type=content_type)
    resp["Content-Disposition"] = _attachment(name)
    return resp


def csv_download(path: Path, name: str, schema=None, *, spreadsheet: bool = False):
    """The exact CSV at ``path``, or (``spreadsheet``) its spreadsheet-safe variant under ``schema``."""
    if not spreadsheet:
        return file_response(path, name)
    return streamed_response(iter_spreadsheet_csv(path, schema), name)
