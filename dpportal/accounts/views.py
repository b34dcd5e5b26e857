"""The password change: a new password must differ from the old one, and a one-time password is then done."""

from __future__ import annotations

from django import forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm

from .models import Profile


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
