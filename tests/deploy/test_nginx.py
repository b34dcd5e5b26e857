"""The shipped nginx config (deploy/nginx.conf) with Debian's nginx fronting gunicorn on loopback: the
attacker's probe (tests/dpportal/http_probe.py) gets the right answers, an oversize body its 413 from nginx,
a response slower than the upstream timeout a 504, and 100 slow clients leave every page under 1 s."""

from __future__ import annotations

import os
import socket
import stat
import time
import uuid

import pytest

from tests.deploy.nginx import NginxStack, nginx_binary
from tests.dpportal import http_probe as probe

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(nginx_binary() is None, reason="nginx is installed by scripts/ensure-system-packages.sh"),
]
SLOW_CLIENTS = 100


def _stack(tmp_path_factory, gunicorn_args=()):
    base = tmp_path_factory.mktemp("nginx")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(
        DPPORTAL_DATA_DIR=str(base / "data"),
        DJANGO_SECRET_KEY="nginx-test-" + uuid.uuid4().hex,
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        DJANGO_BEHIND_PROXY="1",
        PYTHONPATH=str(probe.ROOT),
        DPPORTAL_LOGIN_MAX_FAILURES="100",
    )
    dataset = probe.prepare_database(env)
    s = NginxStack(
        base, env, app="tests.dpportal.slow_wsgi:application", upstream_timeout="3s", gunicorn_args=gunicorn_args
    ).start()
    try:
        deadline = time.monotonic() + 60  # the first request imports the views: longer than the test's timeout
        while probe.request(s.port, "GET", "/accounts/login/")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        yield s, dataset
    finally:
        s.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from _stack(tmp_path_factory)


def test_the_gunicorn_socket_is_private(stack):
    s, _ = stack
    assert stat.S_IMODE(s.socket.stat().st_mode) == 0o660
    assert stat.S_IMODE(s.socket.parent.stat().st_mode) == 0o700


def test_answers_before_a_large_body_come_back(stack):
    s, dataset = stack
    assert probe.big_unauthenticated_post(s.port) == 401
    assert probe.big_json_release_request(s.port, probe.token(s.port), dataset) == 413


def test_an_oversize_body_is_413_from_nginx(stack):
    s, _ = stack
    answer = probe.raw(s.port, b"POST /api/datasets/ HTTP/1.1\r\nHost: h\r\nContent-Length: 300000000\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_client_sent_script_name_does_not_bypass_the_password_change(stack):
    """/static/ is nginx's own location (the crafted path never reaches gunicorn), and header names with
    underscores are dropped besides."""
    s, _ = stack
    plain, crafted, body = probe.script_name_bypass(s.port)
    assert plain == 302 and crafted == 404 and b"probe" not in body


def test_x_forwarded_ssl_does_not_switch_the_scheme(stack):
    s, _ = stack
    assert probe.forwarded_ssl_scheme(s.port) == 200  # over https the Referer-less POST would be 403


def test_pipelined_chunked_and_http10(stack):
    s, _ = stack
    assert probe.pipelined(s.port) == [b"200", b"401"]
    assert probe.chunked_post(s.port) == b"HTTP/1.1 401"
    answer = probe.http10_expect(s.port)
    assert answer.split(b" ")[1] == b"401" and b"100 Continue" not in answer, answer[:200]


def test_a_response_slower_than_the_upstream_timeout_is_504(stack):
    s, _ = stack
    assert probe.request(s.port, "GET", "/__slow__?seconds=1")[:2] == (200, b"done")
    assert probe.request(s.port, "GET", "/__slow__?seconds=5")[0] == 504


def test_static_files_are_served_by_nginx(stack):
    s, _ = stack
    name = next(p for p in sorted((probe.ROOT / "static").rglob("*")) if p.is_file())
    status, body, _ = probe.request(s.port, "GET", "/static/" + str(name.relative_to(probe.ROOT / "static")))
    assert status == 200 and body == name.read_bytes()


@pytest.mark.slow
def test_100_slow_clients_leave_pages_under_a_second(stack):
    s, _ = stack
    api_token = probe.token(s.port)
    slow = []
    for i in range(SLOW_CLIENTS):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        auth = f"Authorization: Token {api_token}\r\n" if i % 2 else ""
        path = "/api/datasets/" if i % 2 else "/accounts/login/"
        c.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: csrftoken=x\r\n{auth}"
                "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 157286400\r\n\r\n-"
            ).encode()
        )
        slow.append(c)
    worst = 0.0
    try:
        pages = (("/accounts/login/", {}), ("/api/datasets/", {"Authorization": f"Token {api_token}"}))
        for _ in range(5):
            for path, headers in pages:
                t0 = time.perf_counter()
                status, _, _ = probe.request(s.port, "GET", path, headers=headers)
                worst = max(worst, time.perf_counter() - t0)
                assert status == 200
            for c in slow:
                c.send(b"-")
            time.sleep(1.5)
        print(f"nginx, {SLOW_CLIENTS} slow clients: slowest page or API answer {worst:.3f} s")
        assert worst < 1.0
        closed = 0  # the slow clients now stall: nginx ends each after client_body_timeout (10 s)
        for c in slow:
            c.settimeout(20)
            try:
                while c.recv(4096):
                    pass
                closed += 1
            except ConnectionResetError:
                closed += 1
        assert closed == SLOW_CLIENTS
    finally:
        for c in slow:
            c.close()
