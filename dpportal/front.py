"""A buffering front for gunicorn (``python -m dpportal.front``), what ``make run`` listens with.

gunicorn's threads read request bodies themselves: a client that declares a large body and sends a
byte every few seconds holds a thread until it ends, and a few dozen such clients hold them all (no
page answers). Production deployments put a buffering proxy in front (nginx with its default
``proxy_request_buffering on`` and ``client_body_timeout``); this is the same idea in the standard
library, so ``make run`` needs no server installed:

* one asyncio loop holds every client connection: a slow client costs a coroutine, not a thread;
* the request line and headers must arrive within ``HEAD_SECONDS``; the body must keep up an average of
  ``MIN_BODY_RATE`` bytes/s after ``BODY_GRACE_SECONDS`` and never stall ``IDLE_SECONDS`` (else 408), and
  is spooled to disk (``uploads/tmp/``, where the leftover sweep finds it after a kill);
* only a complete request goes to gunicorn (over a Unix socket no other host can reach), and gunicorn's
  whole response is read at once, so a slow reader does not hold a thread either;
* a declared body above the upload limit is 413 at once; chunked bodies are 411 (no browser or API
  client here sends them); one request per connection (``Connection: close``).

The client's address goes to Django as the last ``X-Forwarded-For`` entry (``accounts/throttle.py``
trusts it only from the Unix socket or behind a proxy); client-sent ``X-Forwarded-*`` headers are dropped.
Behind a TLS proxy (``DJANGO_BEHIND_PROXY=1``) the front's only client is that proxy: its
``X-Forwarded-For`` (ending with the client's address) and ``X-Forwarded-Proto`` are passed on unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import tempfile
import time

from dpportal.env import env_bool, env_int

HEAD_LIMIT = 64 * 1024
HEAD_SECONDS = 10.0
IDLE_SECONDS = 10.0
BODY_GRACE_SECONDS = 10.0
MIN_BODY_RATE = 16 * 1024  # bytes/s averaged after the grace period: 1 byte every 5 s fails within seconds
UPSTREAM_SECONDS = 180.0  # gunicorn's own timeout is 120 s
SEND_IDLE_SECONDS = 60.0
SPOOL_MEMORY = 1024 * 1024
CHUNK = 64 * 1024
MULTIPART_OVERHEAD = 1024 * 1024  # form fields and boundaries beside the largest file
HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"upgrade", b"expect", b"transfer-encoding"}
FORWARDED = {b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"forwarded"}
REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Front:
    def __init__(
        self,
        upstream: str,
        max_body: int,
        spool_dir: str | None,
        max_connections: int = 4096,
        behind_proxy: bool = False,
    ):
        self.upstream, self.max_body, self.spool_dir = upstream, max_body, spool_dir
        self.slots, self.behind_proxy = max_connections, behind_proxy

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.slots <= 0:
            await _answer(writer, 503, "the server holds too many connections; retry shortly")
            return
        self.slots -= 1
        try:
            await self._serve(reader, writer)
        except Refused as exc:
            await _answer(writer, exc.status, str(exc))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):
            pass
        finally:
            self.slots += 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader, writer) -> None:
        head = await _read_head(reader)
        request_line, headers = _parse_head(head)
        length = self._body_length(headers)
        if any(k == b"expect" and v.lower() == b"100-continue" for k, v in headers) and length:
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        peer = writer.get_extra_info("peername")
        with tempfile.SpooledTemporaryFile(SPOOL_MEMORY, dir=self.spool_dir) as body:
            await _read_body(reader, body, length)
            with tempfile.SpooledTemporaryFile(SPOOL_MEMORY, dir=self.spool_dir) as response:
                await self._forward(request_line, headers, peer, body, length, response)
                await _send(writer, response)

    def _body_length(self, headers) -> int:
        if any(k == b"transfer-encoding" for k, _ in headers):
            raise Refused(411, "send the body with a Content-Length (chunked bodies are not accepted)")
        values = {v.strip() for k, v in headers if k == b"content-length"}
        if not values:
            return 0
        value = values.pop()
        if values or not value.isdigit() or len(value) > 15:
            raise Refused(400, "the Content-Length header is not one whole number")
        if int(value) > self.max_body:
            raise Refused(
                413, f"the request body ({int(value):,} bytes) is larger than the limit of {self.max_body:,} bytes"
            )
        return int(value)

    async def _forward(self, request_line, headers, peer, body, length, response) -> None:
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_unix_connection(self.upstream), IDLE_SECONDS)
        except (OSError, asyncio.TimeoutError):
            raise Refused(502, "the application server is not answering; retry shortly") from None
        try:
            up_writer.write(_upstream_head(request_line, headers, None if self.behind_proxy else peer, length))
            body.seek(0)
            while chunk := body.read(CHUNK):
                up_writer.write(chunk)
                await up_writer.drain()
            await asyncio.wait_for(_copy_all(up_reader, response), UPSTREAM_SECONDS)
        finally:
            up_writer.close()
        if response.tell() == 0:
            raise Refused(502, "the application server closed the connection without an answer")


async def _read_head(reader) -> bytes:
    try:
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
    except asyncio.LimitOverrunError:
        raise Refused(431, f"the request line and headers exceed {HEAD_LIMIT:,} bytes") from None
    except asyncio.TimeoutError:
        raise Refused(408, f"the request headers did not arrive within {HEAD_SECONDS:g} s") from None


def _parse_head(head: bytes):
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise Refused(400, "malformed request line")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise Refused(400, "malformed header line")
        headers.append((name.lower(), value.strip()))
    return lines[0], headers


async def _read_body(reader, body, length: int) -> None:
    started, received = time.monotonic(), 0
    while received < length:
        try:
            chunk = await asyncio.wait_for(reader.read(min(CHUNK, length - received)), IDLE_SECONDS)
        except asyncio.TimeoutError:
            raise Refused(408, f"the request body stalled for {IDLE_SECONDS:g} s") from None
        if not chunk:
            raise ConnectionError("client closed before sending the body")
        received += len(chunk)
        body.write(chunk)
        elapsed = time.monotonic() - started
        if elapsed > BODY_GRACE_SECONDS and received < MIN_BODY_RATE * (elapsed - BODY_GRACE_SECONDS):
            raise Refused(408, f"the request body arrives slower than {MIN_BODY_RATE // 1024} KB/s")


def _upstream_head(request_line: bytes, headers, peer, length: int) -> bytes:
    """The request's head for gunicorn: hop-by-hop headers dropped, the body's length, one request per
    connection; the client's address as X-Forwarded-For (``peer`` None: the proxy's headers pass)."""
    dropped = HOP_BY_HOP | {b"content-length"} | (FORWARDED if peer is not None else set())
    kept = [(k, v) for k, v in headers if k not in dropped]
    if peer is not None:
        kept.append((b"x-forwarded-for", (peer[0] if isinstance(peer, tuple) else "").encode()))
    kept += [(b"content-length", str(length).encode()), (b"connection", b"close")]
    return request_line + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in kept) + b"\r\n"


async def _copy_all(reader, sink) -> None:
    while chunk := await reader.read(CHUNK):
        sink.write(chunk)


async def _send(writer, response) -> None:
    response.seek(0)
    while chunk := response.read(CHUNK):
        writer.write(chunk)
        await asyncio.wait_for(writer.drain(), SEND_IDLE_SECONDS)


async def _answer(writer, status: int, message: str) -> None:
    body = (message + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(Exception):
        writer.write(head + body)
        await asyncio.wait_for(writer.drain(), IDLE_SECONDS)


async def serve(host: str, port: int, front: Front) -> None:
    server = await asyncio.start_server(front.handle, host, port, limit=HEAD_LIMIT, backlog=2048)
    async with server:
        await server.serve_forever()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m dpportal.front", description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="HOST:PORT for clients")
    p.add_argument("--upstream", required=True, help="gunicorn's Unix socket path")
    p.add_argument("--spool-dir", default=None, help="where bodies and responses over 1 MB are spooled")
    args = p.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    max_body = env_int("DPPORTAL_MAX_UPLOAD_BYTES", 200 * 1024 * 1024, minimum=1) + MULTIPART_OVERHEAD
    front = Front(
        args.upstream,
        max_body,
        args.spool_dir,
        max_connections=_connection_slots(),
        behind_proxy=env_bool("DJANGO_BEHIND_PROXY", False),
    )
    print(
        f"dpportal front: listening on {args.listen}, forwarding complete requests to {args.upstream} "
        f"(at most {front.slots} connections)",
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(host.strip("[]"), int(port), front))


def _connection_slots(most: int = 4096) -> int:
    """Connections the front holds at once: each may use 4 descriptors (client, gunicorn, two spool
    files), so the soft limit on open files is raised to the hard one and a quarter of it used."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return max(16, min(most, soft // 4 - 16))


if __name__ == "__main__":
    main()
