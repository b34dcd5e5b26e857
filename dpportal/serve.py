"""`make run`'s web server: waitress serving the Django application (``python -m dpportal.serve``).

waitress reads each request whole in one event loop before a thread runs the application, so a slow
client costs a buffered connection, never a thread: headers and bodies are buffered (bodies over 512 KB
spill to a temporary file), a declared or received body over the upload limit is 413 without reaching
Django, chunked bodies are accepted, and a response is written from waitress's buffers (a slow reader
holds no thread). Header names with underscores are dropped (no ``SCRIPT_NAME`` from a client), the
application prefix is fixed (empty) and the scheme is ``http``: waitress trusts no ``X-Forwarded-*``
header (no ``trusted_proxy``); behind a TLS proxy, ``DJANGO_BEHIND_PROXY=1`` makes Django read its
``X-Forwarded-Proto`` and the login throttle the last ``X-Forwarded-For`` entry.

Above ``DPPORTAL_WEB_CONNECTIONS`` open connections waitress stops accepting: new clients wait in the
listen backlog and are served when a connection closes. A connection with no request in progress and no
byte received for ``DPPORTAL_WEB_IDLE_SECONDS`` is closed.
"""

from __future__ import annotations

import argparse
import os
import resource

from dpportal.env import env_int

MULTIPART_OVERHEAD = 1024 * 1024  # form fields and boundaries beside the largest file
HEADER_LIMIT = 64 * 1024


def options(max_upload_bytes: int) -> dict:
    """waitress's settings from the environment (each checked by dpportal.env)."""
    idle = env_int("DPPORTAL_WEB_IDLE_SECONDS", 30, minimum=1)
    return {
        "threads": env_int("WEB_THREADS", 8, minimum=1),
        "connection_limit": env_int("DPPORTAL_WEB_CONNECTIONS", 1000, minimum=1),
        "channel_timeout": idle,
        "cleanup_interval": max(1, min(30, idle // 2)),
        "max_request_body_size": max_upload_bytes + MULTIPART_OVERHEAD,
        "max_request_header_size": HEADER_LIMIT,
        "asyncore_use_poll": True,  # poll(): no 1024-descriptor ceiling of select()
        "backlog": 2048,
        "url_scheme": "http",
        "url_prefix": "",
        "ident": "dpportal",
    }


def _raise_open_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m dpportal.serve", description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="HOST:PORT")
    p.add_argument("--app", default="dpportal.wsgi:application", help="the WSGI application, MODULE:NAME")
    args = p.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    import importlib

    from django.conf import settings
    from waitress import serve

    module, name = args.app.split(":")
    application = getattr(importlib.import_module(module), name)
    _raise_open_file_limit()
    serve(application, listen=args.listen, **options(settings.DPPORTAL_MAX_UPLOAD_BYTES))


if __name__ == "__main__":
    main()
