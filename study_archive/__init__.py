"""The study archive: a whole study as one file, to back it up or move it between installations (commands
``export_study`` / ``import_study``; README, "Backups and moving a study").

``records`` is the file's format (its record types and their order, the models and columns it covers, one line's
bytes, reading lines back, the end record's checksum), ``exporter`` writes a study's archive (``study_export``) and
``importer`` reads one back, all or nothing (``study_import``).

Why an app of its own: an archive holds rows of benchmark (the material), annotation (schema, study, members,
rounds, assignments, judgments with spans, gold agreements and revisions, session labels, workshop notes, alerts),
metrics (metric runs) and audit (the study's trail), so it sits above all of them in the layers, beside ``reports``
and below ``calibration``, whose protocol services an archive must never call (docs/architecture.md#layers).
Nothing imports it but its commands.
"""
