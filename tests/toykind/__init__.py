"""A third study kind, for the tests only (tests/settings.py registers it): one package, one settings line and its
schema file give it a coding page, a report section and a dashboard tab, with no file outside this package
edited (tests/cab/test_third_kind.py)."""
