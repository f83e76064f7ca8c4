from django.core.management.base import BaseCommand, CommandError

from api import services
from api.models import ApiToken


class Command(BaseCommand):
    help = "Revoke API tokens by the prefix printed when they were created (e.g. cab_AbCdEfGh)."

    def add_arguments(self, parser):
        parser.add_argument("prefix")

    def handle(self, *args, prefix: str, **options):
        tokens = list(ApiToken.objects.filter(key_prefix=prefix[:12], revoked_at__isnull=True))
        if not tokens:
            raise CommandError(f"no active token starts with {prefix!r}")
        for token in tokens:
            services.api_token_revoke(token=token, by=None)
        self.stdout.write(f"revoked {len(tokens)} token(s) starting with {prefix[:12]}")
