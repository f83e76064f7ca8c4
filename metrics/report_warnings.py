"""The report's ``warnings`` live in the computation core (``metrics.core.report_warnings``), so that a report
recomputed from a study bundle without Django (``python -m metrics.core.recompute``) says the same; the pages and
commands import them from here as before."""

from metrics.core.report_warnings import MAIN, report_warnings, section_warnings

__all__ = ["MAIN", "report_warnings", "section_warnings"]
