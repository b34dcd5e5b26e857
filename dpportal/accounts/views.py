"""The login page (throttled), the password change (a new password must differ from the old one, and a
one-time password is then done) and the account page's API tokens: list them, revoke one."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.http import Http404
from django.shortcuts import redirect, render

from dpportal.api.models import MAX_TOKENS_PER_USER

from . import throttle
from .models import Profile


class LoginView(auth_views.LoginView):
    """Django's login, refused with 429 before the password is checked once this address has failed too
    often for this username (or at all)."""

    def post(self, request, *args, **kwargs):
        wait = throttle.admit(request, request.POST.get("username"))  # recorded and counted atomically
        if wait:
            form = self.get_form_class()(request, initial={"username": request.POST.get("username", "")[:150]})
            form.cleaned_data = {}  # unbound: nothing is authenticated
            form.add_error(None, throttle.refusal(wait))
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)


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


class NewPasswordForm(PasswordChangeForm):
    def clean(self):
        cleaned = super().clean()
        new = cleaned.get("new_password2")
        if new and self.user.check_password(new):
            self.add_error("new_password2", forms.ValidationError("The new password must differ from the current one."))
        return cleaned


class PasswordChange(auth_views.PasswordChangeView):
    form_class = NewPasswordForm
    success_url = "/accounts/password/done/"

    def form_valid(self, form):
        response = super().form_valid(form)
        Profile.objects.filter(user=self.request.user).update(must_change_password=False)
        return response
