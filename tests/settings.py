"""The test run's settings: the product's (cab/settings.py), plus a third study kind that only the tests have
(tests/toykind): a kind is one settings line (here two, since INSTALLED_APPS was built from the product's list)."""

from cab.settings import *  # noqa: F403
from cab.settings import INSTALLED_APPS, STUDY_KINDS

STUDY_KINDS = [*STUDY_KINDS, "tests.toykind"]
INSTALLED_APPS = [*INSTALLED_APPS, "tests.toykind"]
