from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api import services
from api.models import ApiToken
from common import commands


class Command(BaseCommand):
    help = (
        "Create an API token for an existing account and print it once (only its SHA-256 is stored). "
        "Example, an ingestion script for one study: "
        "create_api_token --user ingest-bot --scope ingest --study demo --expires-in-days 30"
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username of the account the token acts as")
        parser.add_argument("--name", default="", help="what the token is for")
        parser.add_argument("--scope", action="append", choices=ApiToken.Scope.values, required=True,
                            help="repeat for several: ingest, import, read, metrics, setup")
        parser.add_argument("--study", help="limit the token to this study (slug)")
        parser.add_argument("--expires-in-days", type=int,
                            help=f"1 to {services.TOKEN_DAYS_MAX}; default: never expires")

    def handle(self, *args, user: str, name: str, scope: list[str], study: str | None,
               expires_in_days: int | None, **options):
        account = get_user_model().objects.filter(username=user).first()
        if account is None:
            raise CommandError(f"no account {user!r}")
        found = None
        if study is not None:
            # The token's study model through its lazy foreign key: api sits below the app that owns studies.
            study_model = ApiToken._meta.get_field("study").related_model
            found = study_model._default_manager.filter(slug=study).first()
            if found is None:
                raise commands.study_missing(study)
        if expires_in_days is not None and not 1 <= expires_in_days <= services.TOKEN_DAYS_MAX:
            raise CommandError(f"--expires-in-days must be from 1 to {services.TOKEN_DAYS_MAX}, got {expires_in_days}")
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
        try:
            token, raw = services.api_token_create(user=account, name=name or f"{user} token", scopes=scope,
                                                   study=found, expires_at=expires_at, by=None)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        self.stderr.write(
            f"token {token.key_prefix}… for {user}, scopes {', '.join(token.scopes)}"
            f"{f', study {study}' if study else ''}"
            f"{f', expires {expires_at:%Y-%m-%d %H:%M} UTC' if expires_at else ''}. "
            "It is shown once, below; store it now."
        )
        self.stdout.write(raw)
