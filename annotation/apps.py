from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # Imported here: the services import the models, which are loaded only once the apps are.
        from access.services import on_role_seeing_every_study
        from annotation.selectors import studies_rating_whole_sessions
        from annotation.services import check_alerts_of_turns_sent_back, coder_of_studies_refusal
        from benchmark.material_rules import on_turns_sent_back, on_whole_sessions

        # A response ingested into a completed check item's turn sends it back (the trigger of migration 0025): the
        # reviewer's check-item alert no longer counts it, in the ingestion's transaction.
        on_turns_sent_back(check_alerts_of_turns_sent_back)
        # A session-rated study's item in an open round is its session's whole transcript: no reply is added to
        # it and none of its text changes (benchmark.material_rules, which knows no kind, asks which studies).
        on_whole_sessions(studies_rating_whole_sessions)
        # An account coding blind in a study is given no role that sees every study (access knows no study).
        on_role_seeing_every_study(coder_of_studies_refusal)
