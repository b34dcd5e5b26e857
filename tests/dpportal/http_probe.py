"""What an attacker's probe of the web front tries, as functions of a loopback port: each returns what it
saw, and the tests for `make run`'s server (test_front.py) and for the shipped nginx config
(test_nginx.py) assert the same answers."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_TIME_USER = "analyst1"
ONE_TIME_PASSWORD = "one-time-Pw-1234"


def prepare_database(env: dict) -> int:
    """Migrate, create a steward with a dataset (returns its id) and an analyst still on a one-time password."""
    script = (
        "from dpportal.accounts.models import Profile, make_user\n"
        "s = make_user('steward', 'steward-Pw-1234', role=Profile.STEWARD)\n"
        f"a = make_user({ONE_TIME_USER!r}, {ONE_TIME_PASSWORD!r}, role=Profile.ANALYST)\n"
        "Profile.objects.filter(user=a).update(must_change_password=True)\n"
        "from dpportal.datasets.models import Dataset\n"
        "print('dataset', Dataset.objects.create(owner=s, name='probe').pk)\n"
    )
    for args in (["migrate", "--noinput", "-v0"], ["shell", "-c", script]):
        out = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
    return int(re.search(r"dataset (\d+)", out.stdout).group(1))


def request(port, method, path, body=None, headers=None, timeout=30) -> tuple[int, bytes, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, {k.lower(): v for k, v in resp.getheaders()}


def raw(port, data: bytes, timeout=10.0, until_close=True) -> bytes:
    """Send bytes as they are; read until the server closes (or the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if not until_close and b"\r\n\r\n" in b"".join(chunks):
                break
        return b"".join(chunks)


def token(port, username="steward", password="steward-Pw-1234") -> str:
    status, body, _ = request(
        port,
        "POST",
        "/api/auth/token/",
        json.dumps({"username": username, "password": password}),
        {"Content-Type": "application/json"},
    )
    assert status in (200, 201), body
    return json.loads(body)["token"]


def web_login(port, username, password, extra_headers=None) -> tuple[int, str, bytes]:
    """The login form's POST with its CSRF token and no Referer; returns (status, session cookie, body)."""
    status, body, headers = request(port, "GET", "/accounts/login/")
    assert status == 200, status
    csrf_cookie = re.search(r"csrftoken=([^;]+)", headers.get("set-cookie", "")).group(1)
    csrf_field = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', body).group(1).decode()
    form = f"csrfmiddlewaretoken={csrf_field}&username={username}&password={password}"
    status, body, headers = request(
        port,
        "POST",
        "/accounts/login/",
        form,
        {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf_cookie}",
            **(extra_headers or {}),
        },
    )
    session = re.search(r"sessionid=([^;]+)", headers.get("set-cookie", ""))
    return status, session.group(1) if session else "", body


def big_unauthenticated_post(port) -> int:
    """1 MB to /api/datasets/ without credentials: the application's 401 must come back, not an empty reply."""
    return request(port, "POST", "/api/datasets/", b"x" * 1_000_000, {"Content-Type": "application/octet-stream"})[0]


def big_json_release_request(port, api_token, dataset) -> int:
    """A 6 MB JSON release request (over Django's 5 MB limit for non-file bodies)."""
    body = json.dumps({"mechanism": "mst", "params": {"pad": "x" * 6_000_000}})
    headers = {"Content-Type": "application/json", "Authorization": f"Token {api_token}"}
    return request(port, "POST", f"/api/datasets/{dataset}/releases/", body, headers)[0]


def script_name_bypass(port) -> tuple[int, int, bytes]:
    """An account on its one-time password asks for the dataset list with ``SCRIPT_NAME: /static`` and path
    ``/static/datasets/``; returns (the plain /datasets/ status, the crafted request's status, its body)."""
    status, session, _ = web_login(port, ONE_TIME_USER, ONE_TIME_PASSWORD)
    assert status == 302 and session, status
    cookie = {"Cookie": f"sessionid={session}"}
    plain = request(port, "GET", "/datasets/", headers=cookie)[0]
    crafted = request(port, "GET", "/static/datasets/", headers={**cookie, "SCRIPT_NAME": "/static"})
    return plain, crafted[0], crafted[1]


def forwarded_ssl_scheme(port) -> int:
    """The login form posted with ``X-Forwarded-Ssl: on`` and no Referer: over https Django's CSRF check
    refuses a POST without a Referer (403); over http the wrong password shows the form again (200)."""
    return web_login(port, "steward", "wrong-password", {"X-Forwarded-Ssl": "on", "X-Forwarded-Protocol": "ssl"})[0]


def pipelined(port) -> list[bytes]:
    """Two GETs in one write: both answered, in order."""
    req = b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    last = b"GET /api/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    answer = raw(port, req + last, timeout=20)
    return re.findall(rb"HTTP/1\.1 (\d{3})", answer)


def chunked_post(port) -> bytes:
    """A chunked body to /api/datasets/ without credentials: read and answered (401), never 411."""
    body = b"5\r\nhello\r\n0\r\n\r\n"
    head = (
        b"POST /api/datasets/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
    )
    return raw(port, head + body, timeout=20)[:12]


def http10_expect(port) -> bytes:
    """An HTTP/1.0 request with ``Expect: 100-continue``: the answer, which must not start with 100 Continue."""
    head = b"POST /api/datasets/ HTTP/1.0\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        time.sleep(1.0)  # a server that sends 100 Continue does it now
        s.sendall(b"hello")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer
