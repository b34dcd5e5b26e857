"""Uploads: limits with clear messages, sniffing, and nothing left in storage when refused."""

from __future__ import annotations

import re

import pytest

from dpportal.datasets.models import Dataset
from dpportal.datasets.upload import Limits, UploadError, parse_markers, store_upload

from tests.data import SMALL_CSV, csv_file, stored_files

LIMITS = Limits(max_bytes=2000, max_rows=10, max_columns=5, max_field_length=20)


@pytest.fixture
def steward(personas):
    return personas.owner


def upload(steward, text, limits=LIMITS, markers=("", "?", "NA")):
    return store_upload(csv_file(text), owner=steward, name="t", markers=list(markers), limits=limits)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "the file is empty"),
        ("a,b\n", "header but no data rows"),
        ("a,b\n" + "1,2\n" * 11, "more than 10 data rows"),
        ("a,b,c,d,e,f\n1,2,3,4,5,6\n", "6 columns; the limit is 5"),
        ("a,b\n1," + "x" * 25 + "\n", "row 1 (line 2) has a field longer than the limit of 20 characters"),
        ("a,b\n" + "1,2\n" * 5 + "x" * 3000 + "\n", "larger than the upload limit of"),
        ("a,b\n1,2\n3\n", "row 2 (line 3) has 1 fields, the header has 2"),
        ("a,a\n1,2\n", "duplicate column names"),
        ("a,\n1,2\n", "empty name"),
        ("a,b\u202ec\n1,2\n", "invisible character U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("a,b\u200d\n1,2\n", "invisible character U+200D (ZERO WIDTH JOINER)"),
        ("caf\u00e9,cafe\u0301\n1,2\n", "look identical in the header: 'caf\u00e9' and 'cafe\u0301'"),
        ("\uff41,a\n1,2\n", "column names that look identical"),
        (b"a,b\n1,\x00\x00\n", "NUL bytes"),
        (b"a,b\n\x81\x8d,\x8f\x90\n", "neither UTF-8 nor Windows-1252"),
    ],
)
def test_it_refuses_bad_files_with_a_clear_message_and_keeps_nothing(steward, settings, text, message):
    with pytest.raises(UploadError, match=re.escape(message)):
        upload(steward, text)
    assert Dataset.objects.count() == 0
    assert stored_files(settings.DATA_DIR) == []


def test_it_sniffs_semicolons_and_windows_1252(steward):
    text = "name;city;score\nJosé;Zürich;1,5\nAnaïs;Genève;2\n".encode("cp1252")
    d = upload(steward, text)
    assert (d.delimiter, d.encoding, d.header, d.n_rows) == (";", "cp1252", ["name", "city", "score"], 2)
    cats = {c["name"]: c.get("categories") for c in d.schema_draft["columns"]}
    assert "Zürich" in cats["city"]


def test_it_reads_a_utf8_bom_and_quoted_newlines(steward):
    d = upload(steward, '\ufeffa,b\n"multi\nline",2\nx,3\n'.encode("utf-8"))
    assert d.header == ["a", "b"] and d.n_rows == 2


def test_the_stored_file_is_private_and_the_draft_is_marked_as_suggestions(steward, settings):
    d = upload(steward, SMALL_CSV, limits=Limits(10**6, 100, 10, 100))
    assert d.raw_path().is_file() and str(d.raw_path()).startswith(str(settings.UPLOAD_DIR))
    assert "static" not in d.raw_path().parts
    assert d.schema_draft["draft"] is True and d.schema is None
    assert stored_files(settings.UPLOAD_DIR / "tmp") == []


def test_missing_markers_are_configurable():
    assert parse_markers("?, NA") == ["", "?", "NA"]
    assert parse_markers("n/a", empty_is_missing=False) == ["n/a"]
    assert parse_markers(["", "-"]) == ["", "-"]


def test_the_upload_page_shows_the_limit_message(world, settings):
    settings.DPPORTAL_MAX_COLUMNS = 2
    client = world.client(world.owner)
    resp = client.post("/datasets/upload/", {"file": csv_file(SMALL_CSV), "name": "x", "markers": "?"})
    assert resp.status_code == 200
    assert "4 columns; the limit is 2" in resp.content.decode()


def test_an_oversized_request_is_refused_before_it_is_read(world, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 10
    client = world.client(world.owner)
    big = "a,b\n" + "1,2\n" * 400_000  # 1.6 MB > limit + 1 MB multipart slack
    resp = client.post("/datasets/upload/", {"file": csv_file(big)})
    assert resp.status_code == 413 and b"upload limit" in resp.content
    api = world.client(None).post("/api/datasets/", {"file": csv_file(big)}, **world.api(world.owner))
    assert api.status_code == 413 and "upload limit" in api.json()["error"]


def test_a_spooled_upload_is_moved_into_place_not_copied(world, settings, monkeypatch):
    """Django spools bodies over FILE_UPLOAD_MAX_MEMORY_SIZE to uploads/tmp/; that file is renamed into
    place, so an upload needs its size on disk once, and nothing is left in uploads/tmp/."""
    from dpportal.datasets import upload as upload_module

    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000
    settings.FILE_UPLOAD_TEMP_DIR = str(settings.UPLOAD_DIR / "tmp")

    def no_copy(*args, **kwargs):
        raise AssertionError("a spooled upload was copied")

    monkeypatch.setattr(upload_module, "copy_limited", no_copy)
    text = "age,city\n" + "".join(f"{20 + i % 50},Paris\n" for i in range(500))  # 6 KB: spooled to disk
    resp = world.client(world.owner).post("/datasets/upload/", {"file": csv_file(text), "name": "big", "markers": ""})
    assert resp.status_code == 302, resp.content.decode()[-500:]
    d = Dataset.objects.get(name="big")
    assert d.raw_path().read_text() == text and d.n_rows == 500
    assert list((settings.UPLOAD_DIR / "tmp").iterdir()) == []


def test_a_spooled_upload_over_the_limit_is_refused_and_removed(world, settings):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000
    settings.FILE_UPLOAD_TEMP_DIR = str(settings.UPLOAD_DIR / "tmp")
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 3000
    text = "age,city\n" + "".join(f"{20 + i % 50},Paris\n" for i in range(500))
    before = stored_files(settings.DATA_DIR)
    resp = world.client(world.owner).post("/datasets/upload/", {"file": csv_file(text), "name": "big", "markers": ""})
    assert resp.status_code == 200 and "larger than the upload limit" in resp.content.decode()
    assert not Dataset.objects.filter(name="big").exists()
    assert stored_files(settings.DATA_DIR) == before
