#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        django.setup()
    except ImproperlyConfigured as error:  # a setting refused at start: its one-line reason, not a traceback
        sys.exit(f"cab: {error}")
    if sys.argv[1:2] == ["runserver"]:
        from cab.startup import runserver_started

        runserver_started(sys.argv)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
