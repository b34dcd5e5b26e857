"""The buffering front (dpportal/front.py) against a stub upstream on a Unix socket: what reaches the
application is a complete request with the client's address; slow, oversized or malformed requests are
answered by the front itself and never reach it."""

from __future__ import annotations

import asyncio

import pytest

from dpportal import front as front_module
from dpportal.front import Front


class Upstream:
    """Records each request it receives and answers 200 with a fixed body."""

    def __init__(self):
        self.requests: list[bytes] = []

    async def handle(self, reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
        )
        self.requests.append(head + await reader.readexactly(length))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()


async def _with_front(tmp_path, scenario, *, upstream_up=True, max_body=1000):
    upstream = Upstream()
    sock = str(tmp_path / "up.sock")
    up_server = await asyncio.start_unix_server(upstream.handle, sock) if upstream_up else None
    server = await asyncio.start_server(
        Front(sock, max_body, str(tmp_path)).handle, "127.0.0.1", 0, limit=front_module.HEAD_LIMIT
    )
    port = server.sockets[0].getsockname()[1]
    try:
        return await scenario(port), upstream.requests
    finally:
        server.close()
        if up_server:
            up_server.close()


async def _exchange(port, data: bytes, *, pause_after: float = 0.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if pause_after:
        await asyncio.sleep(pause_after)
    answer = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    return answer


def run(tmp_path, data, **kw):
    pause = kw.pop("pause_after", 0.0)
    return asyncio.run(_with_front(tmp_path, lambda port: _exchange(port, data, pause_after=pause), **kw))


def test_a_complete_request_reaches_the_application_with_the_client_address(tmp_path):
    answer, seen = run(
        tmp_path,
        b"POST /x HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 6.6.6.6\r\nConnection: keep-alive\r\n"
        b"Content-Length: 5\r\n\r\nhello",
    )
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
    assert len(seen) == 1 and seen[0].endswith(b"\r\n\r\nhello")
    head = seen[0].lower()
    assert b"x-forwarded-for: 127.0.0.1\r\n" in head and b"6.6.6.6" not in head
    assert b"connection: close" in head and b"keep-alive" not in head


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", b"411"),
        (b"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", b"413"),
        (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", b"400"),
        (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", b"400"),
        (b"GARBAGE\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
    ],
)
def test_bad_requests_are_answered_by_the_front(tmp_path, request_bytes, status):
    answer, seen = run(tmp_path, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]
    assert seen == []


def test_slow_headers_and_bodies_get_408_and_never_reach_the_application(tmp_path, monkeypatch):
    monkeypatch.setattr(front_module, "HEAD_SECONDS", 0.3)
    monkeypatch.setattr(front_module, "IDLE_SECONDS", 0.3)
    answer, seen = run(tmp_path, b"GET / HTTP/1.1\r\nHost: h\r\n")  # the headers never end
    assert answer.startswith(b"HTTP/1.1 408") and seen == []
    answer, seen = run(tmp_path, b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc")  # the body stalls
    assert answer.startswith(b"HTTP/1.1 408") and b"stalled" in answer and seen == []


def test_a_body_slower_than_the_minimum_rate_gets_408(tmp_path, monkeypatch):
    monkeypatch.setattr(front_module, "BODY_GRACE_SECONDS", 0.0)
    monkeypatch.setattr(front_module, "MIN_BODY_RATE", 10_000_000)

    async def trickle(port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nContent-Length: 500\r\n\r\nx")
        await asyncio.sleep(0.05)
        writer.write(b"x")  # the second byte: now the rate is checked, far below the minimum
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)

    answer, seen = asyncio.run(_with_front(tmp_path, trickle))
    assert answer.startswith(b"HTTP/1.1 408") and b"slower than" in answer and seen == []


def test_no_application_server_is_a_502_not_a_hang(tmp_path):
    answer, _ = run(tmp_path, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", upstream_up=False)
    assert answer.startswith(b"HTTP/1.1 502")


def test_behind_a_tls_proxy_its_forwarded_headers_pass(tmp_path):
    async def scenario(port):
        return await _exchange(
            port, b"GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 6.6.6.6, 10.1.1.1\r\nX-Forwarded-Proto: https\r\n\r\n"
        )

    async def go():
        upstream = Upstream()
        sock = str(tmp_path / "p.sock")
        up = await asyncio.start_unix_server(upstream.handle, sock)
        server = await asyncio.start_server(Front(sock, 1000, str(tmp_path), behind_proxy=True).handle, "127.0.0.1", 0)
        try:
            await scenario(server.sockets[0].getsockname()[1])
        finally:
            server.close()
            up.close()
        return upstream.requests

    head = asyncio.run(go())[0].lower()
    assert b"x-forwarded-for: 6.6.6.6, 10.1.1.1\r\n" in head and b"x-forwarded-proto: https\r\n" in head
    assert head.count(b"x-forwarded-for") == 1
