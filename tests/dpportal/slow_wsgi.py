"""dpportal's WSGI application with one extra path for the web-front tests: ``/__slow__?seconds=N``
answers 200 after N seconds (a response that takes the application long, as a large download can)."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

from dpportal.wsgi import application as dpportal_application


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/__slow__":
        seconds = float(parse_qs(environ.get("QUERY_STRING", "")).get("seconds", ["1"])[0])
        time.sleep(seconds)
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
        return [b"done"]
    return dpportal_application(environ, start_response)
