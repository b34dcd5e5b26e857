"""WSGI entry point (gunicorn dpportal.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from dpportal.private import restrict_umask

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
restrict_umask()  # uploads, the database, temporary files: private to the service user (dpportal/private.py)
application = get_wsgi_application()

# Warm-up: DP-MERF's plan check (run on every DP-MERF release request, before the reservation)
# calibrates its noise with dp-accounting's RDP accountant, whose first import takes 1-2 s. Import it
# once per web process at start, not inside the first such request.
import dp_accounting.rdp  # noqa: E402,F401
