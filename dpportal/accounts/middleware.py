"""An account created with a one-time password reaches nothing but the password change until it is changed."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect
from django.urls import reverse

from .models import must_change_password

MESSAGE = "Choose your own password first: the one you signed in with was a one-time password."


class FirstPasswordMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if must_change_password(request.user) and not self._allowed(request.path):
            if request.path.startswith("/api/"):
                return JsonResponse({"error": "change the one-time password at /accounts/password/ first"}, status=403)
            messages.warning(request, MESSAGE)
            return redirect("password_change")
        return self.get_response(request)

    @staticmethod
    def _allowed(path: str) -> bool:
        open_paths = (reverse("password_change"), reverse("password_change_done"), reverse("logout"))
        return path in open_paths or path.startswith("/static/")
