"""The static files storage of a production deployment: whitenoise's compressed, hashed files, with the import
paths of our JavaScript modules (``static/js/``) rewritten to their hashed names too, as Django's
``support_js_module_import_aggregation`` does, so that ``js/turn/`` and the modules that load it (a study kind's
page script, ``js/<kind>/``) reach each module under one URL and the page runs one instance of each
(docs/architecture.md#apps). Only our own files: a package's modules may name files it does not ship (django-htmx's
extensions do)."""

from whitenoise.storage import CompressedManifestStaticFilesStorage

OWN_MODULES = "js/*.js"  # fnmatch: every .js below js/, subfolders included


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
    # A module's hashed name depends on those of the modules it names: a pass settles one more step of the longest
    # chain (main.js → keys.js → spans.js → forms.js → save.js → page.js, then a kind's page script) in the worst order.
    # Django stops after 5.
    max_post_process_passes = 8
    _js_module_import_aggregation_patterns = (
        OWN_MODULES, CompressedManifestStaticFilesStorage._js_module_import_aggregation_patterns[1],
    )
