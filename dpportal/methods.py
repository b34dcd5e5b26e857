"""HTTP methods outside the API: the web pages are read with GET (and HEAD) and their forms sent with
POST; any other method on a page (PUT, PATCH, DELETE, OPTIONS, TRACE, ...) is answered 405 with an
``Allow`` header before any view runs (a function view would otherwise answer it like a GET). Paths that
do not resolve stay 404; the JSON API (``/api/``) declares its methods per view (``dpportal.api.auth``)."""

from __future__ import annotations

from django.http import HttpResponseNotAllowed
from django.urls import Resolver404, resolve

WEB_METHODS = ("GET", "HEAD", "POST")


class WebMethodsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in WEB_METHODS and not request.path_info.startswith("/api/"):
            try:
                resolve(request.path_info)
            except Resolver404:
                return self.get_response(request)
            return HttpResponseNotAllowed(WEB_METHODS)
        return self.get_response(request)
