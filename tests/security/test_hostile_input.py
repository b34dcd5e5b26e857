"""Hostile and malformed input through the real endpoints (web forms and the JSON API).

Every refused case asserts: a clear message naming the problem (form error on the page, or a 4xx
JSON ``error``), no 500, no job queued (no on-commit callback), the ledger unchanged, no dataset or
release row created, and nothing half-written left in private storage (the upload folder is
compared file by file). A few hostile-but-valid inputs (quoted newlines, path traversal in the
file name, formulas in cells, out-of-bound numbers) must instead be ACCEPTED safely; they are
checked for what "safely" means.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.releases.models import Release
from mechanisms.schema import read_raw_csv
from tests.web.data import SMALL_SCHEMA, stored_files
from tests.web.personas import make_dataset, run_release

HEADER = "age,city,income,note\n"
ROW = "34,Paris,52000.5,ok\n"


# -- state snapshot and the refusal check ------------------------------------------------------------
def snapshot(world, settings) -> tuple:
    return (Dataset.objects.count(), Release.objects.count(), ledger.remaining(world.dataset),
            list(ledger.entries_json(world.dataset).get("entries", [])), stored_files(settings.DATA_DIR))


@pytest.fixture
def refused(world, settings, django_capture_on_commit_callbacks):
    """Call ``refused(send, message)``: ``send()`` makes the request; the response must name the
    problem and nothing may change."""

    def check(send, message: str):
        before = snapshot(world, settings)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            resp = send()
        assert resp.status_code != 500
        if resp["Content-Type"].startswith("application/json"):
            assert 400 <= resp.status_code < 500, (resp.status_code, resp.content[:300])
            text = resp.json()["error"]
        else:
            assert resp.status_code == 200, resp.status_code  # the form is shown again with its error
            text = html.unescape(resp.content.decode())
        assert message in text, f"{message!r} not in {text[:2000]!r}"
        assert callbacks == [], "a job was queued"
        assert snapshot(world, settings) == before
        return text

    return check


def web_upload(world, content: bytes | str, name: str = "data.csv", content_type: str = "text/csv", **fields):
    data = content.encode() if isinstance(content, str) else content
    body = {"name": "t", "markers": "?", "empty_is_missing": "on",
            "file": SimpleUploadedFile(name, data, content_type=content_type), **fields}
    return lambda: world.client(world.owner).post("/datasets/upload/", body)


def api_upload(world, content: bytes | str, name: str = "data.csv", content_type: str = "text/csv"):
    data = content.encode() if isinstance(content, str) else content
    return lambda: world.client(None).post("/api/datasets/", {"file": SimpleUploadedFile(name, data, content_type)},
                                           **world.api(world.owner))


def gzip_bomb() -> bytes:
    return gzip.compress(b"0" * (20 * 1024 * 1024), compresslevel=9)  # 20 MiB of zeros in ~20 KiB


def zip_bomb() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data.csv", HEADER + ROW * 400_000)
    return buf.getvalue()


# -- files ----------------------------------------------------------------------------------------------
UPLOADS = {
    "empty file": (b"", "file is empty"),
    "header only": (HEADER, "header but no data rows"),
    "blank lines only after the header": (HEADER + "\n\n\n", "header but no data rows"),
    "no header (blank first line)": (",,,\n1,2,3,4\n", "no header row"),
    "non-UTF-8 bytes": (b"a,b\n\x81\x8d,\x8f\x90\n", "neither UTF-8 nor Windows-1252"),
    "mixed encodings": ("age,city\n1,Z\u00fcrich\n".encode() + "2,M\u00e4lm\u00f6\n".encode("cp1252"),
                        "the file mixes encodings"),
    "UTF-16 text": ((HEADER + ROW).encode("utf-16"), "NUL bytes"),
    "NUL bytes in a cell": (b"a,b\n1,\x00\x00\n", "NUL bytes"),
    "ragged rows (short)": (HEADER + ROW + "1,2\n", "has 2 fields, the header has 4"),
    "ragged rows (long)": (HEADER + ROW + "1,2,3,4,5\n", "has 5 fields, the header has 4"),
    "unterminated quote": (HEADER + '1,"Paris,3,4\n5,Lyon,6,7\n', "CSV"),
    "10,000 columns": (",".join(f"c{i}" for i in range(10_000)) + "\n" + ",".join("1" * 10_000) + "\n",
                       "10,000 columns; the limit is 200"),
    "a 1 MiB field": (HEADER + "1,Paris,2," + "x" * (1024 * 1024) + "\n", "limit of 1,000 characters"),
    "a long unquoted field": (HEADER + "1,Paris,2," + "y" * 5000 + "\n", "longer than the limit of 1,000"),
    "duplicate column names": ("age,age,city\n1,2,Paris\n", "duplicate column names"),
    "duplicate names after trimming spaces": ("age, age ,city\n1,2,Paris\n", "duplicate column names"),
    "empty column name": ("age,,city\n1,2,Paris\n", "empty name"),
    "a 300-character column name": ("a" * 300 + ",b\n1,2\n", "at most 200 characters"),
    "gzip bomb disguised as CSV": (gzip_bomb(), "gzip archive, not a CSV"),
    "zip bomb disguised as CSV": (zip_bomb(), "zip archive, not a CSV"),
    "binary garbage (PNG)": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "NUL bytes"),
}


@pytest.mark.parametrize("case", sorted(UPLOADS))
def test_web_upload_refuses(world, refused, case):
    content, message = UPLOADS[case]
    refused(web_upload(world, content), message)


@pytest.mark.parametrize("case", ["empty file", "header only", "ragged rows (short)", "gzip bomb disguised as CSV",
                                  "10,000 columns", "mixed encodings"])
def test_api_upload_refuses(world, refused, case):
    content, message = UPLOADS[case]
    refused(api_upload(world, content), message)


def test_stream_limit_refuses_a_file_longer_than_the_cap(world, refused, settings):
    settings.DPPORTAL_MAX_UPLOAD_BYTES = 4096
    refused(web_upload(world, HEADER + ROW * 1000), "larger than the upload limit of 0.0 MB")


def test_row_limit_refuses_a_billion_row_claim_while_streaming(world, refused, settings):
    settings.DPPORTAL_MAX_ROWS = 100  # the same check that stops a billion rows, without sending them
    refused(web_upload(world, HEADER + ROW * 101), "more than 100 data rows")


def test_a_huge_content_length_is_refused_before_reading(world, settings):
    before = snapshot(world, settings)
    resp = world.client(None).generic("POST", "/api/datasets/", b"x" * 10, content_type="multipart/form-data",
                                      CONTENT_LENGTH=str(10**12), **world.api(world.owner))
    assert resp.status_code == 413 and "upload limit" in resp.json()["error"]
    assert snapshot(world, settings) == before


def test_wrong_content_type_json_instead_of_a_file(world, refused):
    refused(lambda: world.client(None).post("/api/datasets/", '{"file": "age,city"}', content_type="application/json",
                                            **world.api(world.owner)), "multipart form field 'file'")


def test_a_too_long_missing_marker_is_named(world, refused):
    refused(web_upload(world, HEADER + ROW, markers="?, " + "m" * 60), "at most 50 characters")


# -- hostile-but-valid uploads are accepted safely --------------------------------------------------------
def test_quoted_newlines_are_one_row(world, settings):
    resp = web_upload(world, HEADER + '34,Paris,1,"two\nlines"\n40,Lyon,2,ok\n')()
    assert resp.status_code == 302
    assert Dataset.objects.latest("pk").n_rows == 2


def test_path_traversal_in_the_file_name_stays_in_private_storage(world, settings):
    resp = web_upload(world, HEADER + ROW, name="../../../../etc/cron.d/evil.csv")()
    assert resp.status_code == 302
    ds = Dataset.objects.latest("pk")
    assert ds.original_filename == "evil.csv"
    assert ds.raw_path().resolve().parent == (settings.UPLOAD_DIR).resolve()
    assert not any(".." in f or "evil" in f for f in stored_files(settings.DATA_DIR))


def test_an_octet_stream_content_type_is_judged_by_content(world, settings):
    assert web_upload(world, HEADER + ROW, content_type="application/octet-stream")().status_code == 302


def test_html_in_names_and_cells_is_escaped(world):
    ds = make_dataset(world.owner, text="age,<script>alert(1)</script>\n1,<img src=x onerror=alert(2)>\n",
                      schema=None, budget=None)
    Dataset.objects.filter(pk=ds.pk).update(name="<script>alert(3)</script>")
    client = world.client(world.owner)
    for url in (f"/datasets/{ds.pk}/", f"/datasets/{ds.pk}/schema/", "/datasets/"):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page, url


def test_formulas_in_cells_are_neutralised_in_the_synthetic_csv(world):
    schema = json.loads(json.dumps(SMALL_SCHEMA))
    schema["columns"][1]["categories"] = ["=cmd|' /C calc'!A0", "@SUM(1)", "other"]
    text = HEADER + "".join(f"{30 + i},=cmd|' /C calc'!A0,100,x\n{40 + i},@SUM(1),200,y\n" for i in range(10))
    ds = make_dataset(world.owner, text=text, schema=schema)
    release = run_release(ds, world.owner, rows=40)
    body = world.client(world.owner).get(f"/releases/{release.pk}/synthetic.csv")
    content = b"".join(body.streaming_content).decode()
    cities = {line.split(",")[1] for line in content.splitlines()[1:]}
    assert not any(c.lstrip('"')[:1] in "=+-@" for c in cities), cities


def test_out_of_bound_numbers_are_clipped_to_the_declared_bounds(world):
    text = HEADER + "999,Paris,1e12,x\n-5,Lyon,-1e12,y\n1e300,Nice,2,z\n"
    ds = make_dataset(world.owner, text=text, schema=SMALL_SCHEMA)
    prepared = ds.confirmed_schema().prepare(read_raw_csv(ds.raw_path(), encoding=ds.encoding, sep=ds.delimiter))
    assert prepared["age"].between(18, 90).all() and prepared["income"].between(0, 100000).all()


# -- schema JSON ----------------------------------------------------------------------------------------
def _schema(**changes) -> dict:
    s = json.loads(json.dumps(SMALL_SCHEMA))
    for name, value in changes.items():
        col = next(c for c in s["columns"] if c["name"] == name.split("__")[0])
        col[name.split("__")[1]] = value
    return s


SCHEMAS = {
    "not JSON": ("{columns: [", "not valid JSON"),
    "a JSON list": ("[1, 2]", "must be a JSON object"),
    "no columns": ({"columns": []}, "non-empty 'columns' list"),
    "a column the file lacks": ({**SMALL_SCHEMA, "columns": SMALL_SCHEMA["columns"] + [
        {"name": "ssn", "kind": "excluded"}]}, "not in the file: ['ssn']"),
    "a file column left undeclared": ({**SMALL_SCHEMA, "columns": SMALL_SCHEMA["columns"][:3]},
                                      "does not describe column(s) ['note']"),
    "unknown kind": (_schema(age__kind="money"), "kind must be one of"),
    "lower above upper": (_schema(age__lower=90, age__upper=18), "age"),
    "infinite bound": ('{"columns": [{"name": "age", "kind": "integer", "lower": 0, "upper": Infinity}]}',
                       "finite"),
    "NaN bound": ('{"columns": [{"name": "age", "kind": "integer", "lower": NaN, "upper": 9}]}', "finite"),
    "string bound": (_schema(age__lower="zero"), "lower must be a number"),
    "zero bins": (_schema(age__bins=0), "bins must be an integer in 1..10000"),
    "a billion bins": (_schema(age__bins=10**9), "bins must be an integer in 1..10000"),
    "empty category list": (_schema(city__categories=[]), "at least one category"),
    "duplicate categories": (_schema(city__categories=["Paris", "Paris", "other"]), "categories must be unique"),
    "categories outside the declared list": (_schema(city__categories=["Paris"], city__other=None),
                                            "outside the declared categories"),
    "text in a numeric column": ({**SMALL_SCHEMA, "columns": [{"name": "city", "kind": "integer", "lower": 0,
                                                               "upper": 9, "fill": 0}] + SMALL_SCHEMA["columns"][:1]
                                  + SMALL_SCHEMA["columns"][2:]}, "not numbers"),
    "missing values without fill": (_schema(income__fill=None), "no 'fill' declared"),
    "unknown column field": (_schema(age__secret=1), "unknown fields"),
}


@pytest.mark.parametrize("case", sorted(SCHEMAS))
def test_api_schema_refuses(world, refused, case):
    body, message = SCHEMAS[case]
    text = body if isinstance(body, str) else json.dumps({k: v for k, v in body.items()})
    refused(lambda: world.client(None).put(f"/api/datasets/{world.dataset.pk}/schema/", text,
                                           content_type="application/json", **world.api(world.owner)), message)


def test_web_schema_import_refuses_a_mismatch_with_a_message(world, settings):
    before = snapshot(world, settings)
    body = json.dumps(SCHEMAS["a column the file lacks"][0])
    resp = world.client(world.owner).post(f"/datasets/{world.dataset.pk}/schema/import/", {"schema_text": body},
                                          follow=True)
    assert resp.status_code == 200 and "not in the file: [&#x27;ssn&#x27;]" in resp.content.decode()
    assert snapshot(world, settings) == before


@pytest.mark.parametrize("cell", ["nan", "NaN", "1e400", "0x1F"])
def test_non_numbers_in_a_numeric_column_are_named(world, refused, cell):
    ds = make_dataset(world.owner, text=HEADER + f"{cell},Paris,1,x\n40,Lyon,2,y\n", schema=None, budget=None)
    refused(lambda: world.client(None).put(f"/api/datasets/{ds.pk}/schema/", json.dumps(SMALL_SCHEMA),
                                           content_type="application/json", **world.api(world.owner)),
            f"value(s) are not numbers (e.g. '{cell}')")


# -- release requests -------------------------------------------------------------------------------------
RELEASES = {
    "negative epsilon": ({"epsilon": "-1"}, "epsilon"),
    "zero epsilon": ({"epsilon": "0"}, "epsilon"),
    "NaN epsilon": ({"epsilon": "NaN"}, "epsilon"),
    "infinite epsilon": ({"epsilon": "inf"}, "epsilon"),
    "huge epsilon": ({"epsilon": "1e308"}, "epsilon"),
    "epsilon as text": ({"epsilon": "lots"}, "epsilon"),
    "epsilon as a list": ({"epsilon": [1]}, "epsilon"),
    "epsilon as a boolean": ({"epsilon": True}, "epsilon"),
    "delta of one": ({"mechanism": "density-lp", "epsilon": "0.1", "delta": "1"}, "delta"),
    "delta above one": ({"epsilon": "0.1", "delta": "2"}, "delta"),
    "negative delta": ({"epsilon": "0.1", "delta": "-1e-6"}, "delta"),
    "NaN delta": ({"epsilon": "0.1", "delta": "nan"}, "delta"),
    "unknown mechanism": ({"mechanism": "magic"}, "unknown mechanism 'magic'"),
    "mechanism as a list": ({"mechanism": ["baseline"]}, "unknown mechanism"),
    "zero rows": ({"rows": 0}, "rows must be between 1"),
    "negative rows": ({"rows": -5}, "rows must be between 1"),
    "a billion rows": ({"rows": 10**9}, "rows must be between 1 and 1,000,000"),
    "rows as text": ({"rows": "many"}, "rows must be a whole number"),
    "params as a list": ({"params": [1, 2]}, "params"),
    "unknown parameter": ({"params": {"nonsense": 1}}, "nonsense"),
    "over budget": ({"epsilon": "5"}, "budget"),
    "unknown field": ({"priority": "high"}, "unknown field(s) ['priority']"),
}


@pytest.mark.parametrize("case", sorted(RELEASES))
def test_api_release_refuses(world, refused, case):
    changes, message = RELEASES[case]
    body = {"mechanism": "baseline", "epsilon": "0.1", "rows": 5, **changes}
    refused(lambda: world.client(None).post(f"/api/datasets/{world.dataset.pk}/releases/", json.dumps(body),
                                            content_type="application/json", **world.api(world.owner)), message)


def test_api_release_refuses_a_body_that_is_not_json(world, refused):
    refused(lambda: world.client(None).post(f"/api/datasets/{world.dataset.pk}/releases/", "epsilon=1",
                                            content_type="application/x-www-form-urlencoded",
                                            **world.api(world.owner)), "not valid JSON")


@pytest.mark.parametrize("epsilon, message", [("-1", "epsilon"), ("nan", "epsilon"), ("1e308", "epsilon")])
def test_web_release_form_refuses_bad_epsilon(world, refused, epsilon, message):
    refused(lambda: world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/releases/new/",
        {"mechanism": "baseline", "epsilon": epsilon, "delta": "0", "rows": "5"}), message)


def test_web_release_form_refuses_rows_out_of_range(world, refused):
    refused(lambda: world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/releases/new/",
        {"mechanism": "baseline", "epsilon": "0.1", "delta": "0", "rows": "1000000000"}), "rows")


@pytest.mark.parametrize("body, message", [({"epsilon": "-2"}, "epsilon"), ({"epsilon": "nan"}, "epsilon"),
                                           ({"epsilon": "1", "delta": "1.5"}, "delta"), ({}, "epsilon")])
def test_api_budget_refuses(world, refused, body, message):
    refused(lambda: world.client(None).put(f"/api/datasets/{world.dataset.pk}/budget/", json.dumps(body),
                                           content_type="application/json", **world.api(world.owner)), message)


def test_free_draws_refuse_bad_row_counts(world, refused):
    refused(lambda: world.client(None).post(f"/api/releases/{world.release.pk}/draws/", '{"rows": -1}',
                                            content_type="application/json", **world.api(world.owner)),
            "rows must be between 1")
