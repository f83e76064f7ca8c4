#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")
    from django.core.management import execute_from_command_line

    if sys.argv[1:2] == ["runserver"]:
        import django

        django.setup()
        from cab.startup import log_mode

        log_mode()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
