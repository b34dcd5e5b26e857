"""The account page's API tokens: list them, revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render

from dpportal.api.models import MAX_TOKENS_PER_USER


@login_required
def api_tokens(request):
    if request.method == "POST":
        pk = request.POST.get("revoke", "")
        if not (pk.isascii() and pk.isdigit() and len(pk) < 19):
            raise Http404
        deleted, _ = request.user.api_tokens.filter(pk=int(pk)).delete()
        if not deleted:
            raise Http404
        messages.success(request, "Token revoked: it no longer answers.")
        return redirect("dpportal-api-tokens-page")
    tokens = request.user.api_tokens.order_by("created_at", "pk")
    return render(request, "accounts/tokens.html", {"tokens": tokens, "limit": MAX_TOKENS_PER_USER})
