"""python manage.py create_steward USERNAME --password P  (non-interactive)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dpportal.accounts.models import Profile, make_user


class Command(BaseCommand):
    help = "Create a data steward account without prompting."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--email", default="")
        parser.add_argument("--role", default=Profile.STEWARD, choices=[r for r, _ in Profile.ROLES])

    def handle(self, *args, username, password, email, role, **opts):
        if get_user_model().objects.filter(username=username).exists():
            raise CommandError(f"user {username!r} already exists")
        if not password:
            raise CommandError("--password must not be empty")
        make_user(username, password, role=role, email=email)
        self.stdout.write(f"created {role} {username!r}")
