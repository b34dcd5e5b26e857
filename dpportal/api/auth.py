"""Token authentication for the JSON API: ``Authorization: Token <key>``. API views are CSRF-exempt
because they never read the session cookie; errors are JSON with an ``error`` message."""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from django.contrib.auth.models import AnonymousUser
from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from mechanisms import safejson

from .models import Token, TokenRefused


DEFAULT_RETRY_AFTER = 60  # seconds a 429 asks the client to wait when the refusal names no time


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400, *, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def error(message: str, status: int, *, retry_after: int | None = None) -> JsonResponse:
    """The JSON error; every 429 carries ``Retry-After`` (seconds)."""
    resp = JsonResponse({"error": message}, status=status)
    if status == 429:
        resp["Retry-After"] = str(max(int(retry_after or DEFAULT_RETRY_AFTER), 1))
    return resp


def json_body(request) -> dict:
    """The body as a JSON object, parsed with limits on size, depth and number length (4xx, never 500)."""
    try:
        body = request.body
    except RequestDataTooBig:
        raise ApiError(
            f"the request body is larger than the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes", 413
        ) from None
    if not body:
        raise ApiError("the request body must be a JSON object")
    try:
        data = safejson.loads(body)
    except safejson.JsonLimitError as exc:
        raise ApiError(f"the request body is {_article(str(exc))}") from None
    if not isinstance(data, dict):
        raise ApiError(f"the request body must be a JSON object, got {type(data).__name__}")
    return data


def _article(message: str) -> str:
    """'not valid JSON: ...' reads on after 'the request body is'; limit messages get 'refused: '."""
    return message if message.startswith("not ") else f"refused: {message}"


def _head(wrapper, request, *args, **kwargs):
    """HEAD answered like GET (status and headers, ``Content-Length`` of the GET body) without a body."""
    request.method = "GET"
    try:
        resp = wrapper(request, *args, **kwargs)
    finally:
        request.method = "HEAD"
    if resp.streaming:  # a file's Content-Length is set already; the file itself is closed with the response
        resp.streaming_content = []
    else:
        length = len(resp.content)
        resp.content = b""
        resp["Content-Length"] = str(length)
    return resp


def api_view(*methods: str, auth: bool = True):
    allowed = [*methods, "HEAD"] if "GET" in methods and "HEAD" not in methods else list(methods)

    def decorator(view):
        @csrf_exempt
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method == "HEAD" and "GET" in methods:
                return _head(wrapper, request, *args, **kwargs)
            if request.method not in methods:
                resp = error(f"method {request.method} not allowed; use {', '.join(allowed)}", 405)
                resp["Allow"] = ", ".join(allowed)
                return resp
            request.user = AnonymousUser()
            if auth:
                header = request.META.get("HTTP_AUTHORIZATION", "")
                scheme, _, key = header.partition(" ")
                token = Token.for_key(key.strip()) if scheme.lower() in ("token", "bearer") and key else None
                if token is None:
                    return error(
                        "authentication required: send 'Authorization: Token <key>' (POST /api/auth/token/ issues one)",
                        401,
                    )
                request.user, request.api_token = token.user, token
            try:
                return view(request, *args, **kwargs)
            except Http404:
                return error("not found", 404)
            except (ApiError, TokenRefused) as exc:
                return error(str(exc), exc.status, retry_after=getattr(exc, "retry_after", None))

        return wrapper

    return decorator
