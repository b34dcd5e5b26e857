"""`make run`'s web server (``python -m dpportal.serve``: waitress serving Django) on loopback against the
attacker's probe (tests/dpportal/http_probe.py): answers sent before a large body is read come back,
client-sent ``SCRIPT_NAME`` and ``X-Forwarded-Ssl`` change nothing, pipelined and chunked requests are
answered, HTTP/1.0 gets no ``100 Continue``, clients over the connection limit wait and are answered, idle
connections are closed, and a slow response completes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from tests.dpportal import http_probe as probe
from tests.live import free_port, wait_for_port

pytestmark = [pytest.mark.services]
CONNECTIONS = 12
IDLE_SECONDS = 2
SLOW_APP = "tests.dpportal.slow_wsgi:application"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("serve")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(
        DPPORTAL_DATA_DIR=str(data),
        DJANGO_SECRET_KEY="front-test-" + uuid.uuid4().hex,
        DJANGO_SETTINGS_MODULE="dpportal.settings",
        PYTHONPATH=str(probe.ROOT),
        DPPORTAL_WEB_CONNECTIONS=str(CONNECTIONS),
        DPPORTAL_WEB_IDLE_SECONDS=str(IDLE_SECONDS),
        DPPORTAL_LOGIN_MAX_FAILURES="100",
    )
    dataset = probe.prepare_database(env)
    port = free_port()
    log = open(data / "serve.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpportal.serve", "--listen", f"127.0.0.1:{port}", "--app", SLOW_APP],
        cwd=probe.ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc, timeout=60)
        yield port, dataset
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_answers_before_a_large_body_come_back(server):
    port, dataset = server
    assert probe.big_unauthenticated_post(port) == 401
    assert probe.big_json_release_request(port, probe.token(port), dataset) == 413


def test_an_oversize_declared_body_is_413_before_django(server):
    port, _ = server
    answer = probe.raw(port, b"POST /api/datasets/ HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999999\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_client_sent_script_name_does_not_bypass_the_password_change(server):
    port, _ = server
    plain, crafted, body = probe.script_name_bypass(port)
    assert plain == 302  # to the password change
    assert crafted == 404 and b"probe" not in body  # /static/datasets/ is no page; the dataset list is not shown


def test_x_forwarded_ssl_does_not_switch_the_scheme(server):
    port, _ = server
    assert probe.forwarded_ssl_scheme(port) == 200  # over https the Referer-less POST would be 403


def test_pipelined_chunked_and_http10(server):
    port, _ = server
    assert probe.pipelined(port) == [b"200", b"401"]
    assert probe.chunked_post(port) == b"HTTP/1.1 401"
    answer = probe.http10_expect(port)
    assert answer.split(b" ")[1] == b"401" and b"100 Continue" not in answer, answer[:200]


def test_a_slow_response_completes(server):
    port, _ = server
    status, body, _ = probe.request(port, "GET", "/__slow__?seconds=3")
    assert (status, body) == (200, b"done")


def test_clients_over_the_connection_limit_wait_and_idle_connections_are_closed(server):
    """CONNECTIONS idle connections fill the limit; the next client waits in the backlog (not refused,
    not dropped) and is answered once the server closes the idle ones after IDLE_SECONDS."""
    port, _ = server
    idle = [socket.create_connection(("127.0.0.1", port), timeout=15) for _ in range(CONNECTIONS)]
    try:
        time.sleep(0.5)
        t0 = time.monotonic()
        status, _, _ = probe.request(port, "GET", "/accounts/login/", timeout=30)
        waited = time.monotonic() - t0
        print(f"over the limit: answered after {waited:.1f} s")
        assert status == 200 and waited >= 0.5
        for s in idle:
            assert s.recv(1) == b""  # closed by the server, not left open
    finally:
        for s in idle:
            s.close()
