from django.apps import AppConfig


class StudyArchiveConfig(AppConfig):
    name = "study_archive"
    verbose_name = "Study archive"
