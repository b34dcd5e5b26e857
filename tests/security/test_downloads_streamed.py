"""Downloads are streamed with bounded memory per request: the exact CSV from disk in blocks, the
spreadsheet-safe CSV a chunk of rows at a time (never the whole table in memory), with the same text
as writing the whole table at once; date columns are guarded in the spreadsheet-safe file too."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from django.http import FileResponse, StreamingHttpResponse

from dpportal.releases import downloads
from mechanisms import io as mio
from mechanisms.schema import Schema
from mechanisms.source import read_raw_csv

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "city", "kind": "categorical", "categories": ["=cmd|' /C calc'!A0", "Paris", "-x"]},
            {"name": "temp", "kind": "integer", "lower": -10, "upper": 10},
            {
                "name": "day",
                "kind": "date",
                "lower": "2020-01-01",
                "upper": "2020-12-31",
                "granularity": "day",
                "format": "%Y-%m-%d",
            },
        ]
    }
)


def exact_file(tmp_path, rows: int):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "city": rng.choice(["=cmd|' /C calc'!A0", "Paris", "-x", 'say "hi", twice'], rows),
            "temp": rng.integers(-10, 11, rows),
            "day": rng.choice(["2020-01-25", "=2020-01-25", "+2020-02-01"], rows),  # a file written before
        }
    )
    path = tmp_path / "synthetic.csv"
    frame.to_csv(path, index=False)
    return path


def whole_table_text(path) -> str:
    return mio.spreadsheet_safe(read_raw_csv(path, skipinitialspace=False), SCHEMA).to_csv(index=False)


def test_the_spreadsheet_csv_is_streamed_in_chunks_with_the_same_text(tmp_path):
    path = exact_file(tmp_path, 2_500)
    pieces = list(mio.iter_spreadsheet_csv(path, SCHEMA, chunk_rows=1_000))
    assert len(pieces) == 3 and all(p.count("\n") <= 1_001 for p in pieces)  # one chunk of rows held at a time
    assert "".join(pieces) == whole_table_text(path)
    resp = downloads.csv_download(path, "t.csv", SCHEMA, spreadsheet=True)
    assert isinstance(resp, StreamingHttpResponse) and resp["Content-Disposition"] == 'attachment; filename="t.csv"'
    assert b"".join(resp.streaming_content).decode() == whole_table_text(path)


def test_the_exact_csv_is_sent_from_disk_in_blocks(tmp_path):
    path = exact_file(tmp_path, 50_000)
    resp = downloads.csv_download(path, "t.csv")
    assert isinstance(resp, FileResponse) and resp.block_size == downloads.FILE_BLOCK_BYTES
    blocks = list(resp.streaming_content)
    resp.file_to_stream.close()
    assert max(len(b) for b in blocks) <= downloads.FILE_BLOCK_BYTES and b"".join(blocks) == path.read_bytes()


def test_a_header_only_file_is_streamed_with_its_guarded_header(tmp_path):
    path = tmp_path / "synthetic.csv"
    path.write_text("=city,temp,day\n")
    assert "".join(mio.iter_spreadsheet_csv(path, SCHEMA)) == "'=city,temp,day\n"


def test_the_web_download_is_streamed(world):
    resp = world.client(world.owner).get(f"/releases/{world.release.pk}/synthetic-spreadsheet.csv")
    assert resp.status_code == 200 and resp.streaming
    body = b"".join(resp.streaming_content).decode()
    assert body == whole_table_text_for(world.release)
    api = world.client(None).get(
        f"/api/releases/{world.release.pk}/synthetic-spreadsheet.csv", **world.api(world.owner)
    )
    assert api.status_code == 200 and api.streaming and b"".join(api.streaming_content).decode() == body


def whole_table_text_for(release) -> str:
    return mio.spreadsheet_safe(
        read_raw_csv(release.output_path(), skipinitialspace=False), release.public_schema()
    ).to_csv(index=False)


def test_formulas_in_date_columns_are_guarded_in_the_spreadsheet_csv(tmp_path):
    path = exact_file(tmp_path, 300)
    guarded = pd.read_csv(io.StringIO("".join(mio.iter_spreadsheet_csv(path, SCHEMA))), dtype=str)
    assert set(guarded["day"]) == {"2020-01-25", "'=2020-01-25", "'+2020-02-01"}
    assert set(guarded["temp"].str.lstrip("-").str.isdigit()) == {True}  # numbers untouched
