#!/usr/bin/env python
"""Django's command-line utility for dpportal."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dpportal.settings")
    if sys.argv[1:2] != ["collectstatic"]:  # static files are public; everything else it writes is private
        from dpportal.private import restrict_umask

        restrict_umask()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
