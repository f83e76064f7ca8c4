"""A long schemathesis run against the live API schema: many more generated requests per operation than the test
suite's, with fresh randomness each run. Against a throwaway database only (it writes whatever it generates):

    .venv/bin/python scripts/testenv.py -- .venv/bin/python perf/api_fuzz.py --examples 200

Exits non-zero when any answer was a 5xx or strayed from the schema, and lists them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cab.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=200, help="requests per operation and mode (default 200)")
    parser.add_argument("--seeded", action="store_true", help="derandomised, as in the test suite")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        sys.exit("api_fuzz: run under scripts/testenv.py (it writes to the database it is given)")

    import django

    django.setup()
    import logging

    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    logging.getLogger("django.request").setLevel(logging.ERROR)  # 4xx answers are the point here, not news
    call_command("migrate", verbosity=0)

    from access import roles
    from access.services import user_ensure
    from tests.api.fuzz import fuzz, fuzz_material, steer_to

    admin = user_ensure(username="fuzz-admin", role=roles.ADMIN)
    run_id, token = fuzz_material(admin)
    report = fuzz(get_wsgi_application(), token=token, examples=args.examples, steer=steer_to(run_id),
                  derandomize=args.seeded)
    print(f"{report.cases} requests to {report.operations} operations in {report.seconds:.0f} s "
          f"({args.examples} per operation and mode, {'seeded' if args.seeded else 'random'})")
    print(f"statuses: {dict(sorted(report.statuses.items()))}")
    for label, statuses in report.by_operation.items():
        print(f"  {label}: {dict(sorted(statuses.items()))}")
    for skipped in report.skipped:
        print(f"skipped: {skipped}")
    for failure in report.failures:
        print(f"\nFAILURE {failure}")
    print(f"\n{len(report.failures)} failure(s); {sum(n for s, n in report.statuses.items() if s >= 500)} 5xx")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
