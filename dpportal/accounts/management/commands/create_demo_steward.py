"""Create the demo steward once (``make run``) and print its credentials once."""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from dpportal.accounts.models import Profile, make_user

DEMO_USERNAME = "steward"


class Command(BaseCommand):
    help = "Create the demo steward account if it does not exist and print its password once."

    def handle(self, *args, **opts):
        if get_user_model().objects.filter(username=DEMO_USERNAME).exists():
            self.stdout.write(f"demo steward {DEMO_USERNAME!r} exists (password was printed when it was created)")
            return
        password = secrets.token_urlsafe(12)
        make_user(DEMO_USERNAME, password, role=Profile.STEWARD)
        bar = "=" * 60
        self.stdout.write(
            f"{bar}\n demo steward created -- shown only this once\n"
            f"   username: {DEMO_USERNAME}\n   password: {password}\n{bar}"
        )
