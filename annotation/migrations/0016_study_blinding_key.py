"""Each study gets a blinding key of its own (``Study.blinding_key``), which keys its reviewers' response handles
(``annotation.selectors.response_handle``) in place of SECRET_KEY.

Existing studies keep their handles: until now a handle was Django's ``salted_hmac`` of (coder, turn, response)
under the salt ``annotation.response-handle``, i.e. HMAC-SHA256 keyed by SHA-256(salt + SECRET_KEY), and a handle
is now HMAC-SHA256 keyed by the study's key. So each existing study is given exactly that derived key, computed from
the SECRET_KEY this migration runs with: every handle stays the same, and a reviewer's page opened before the
upgrade keeps saving after it. Such a study's key stays derived from the old SECRET_KEY (anyone who knows or
guesses that key can compute it) until an admin rotates it between rounds (``manage.py rotate_blinding_key SLUG``
or the study's settings page); rotating SECRET_KEY from now on no longer changes it. Run this migration with the
SECRET_KEY the site ran with, or the existing studies' handles change (open pages then save nothing until they
are reloaded). Studies created from now on get 32 random bytes.

The order of a reviewer's judgments in the API (annotation.selectors.judgments_visible_to) is keyed by the study's
key from now on as well; it was keyed from SECRET_KEY under another salt, which the stored key cannot reproduce, so
that order changes once, here: an API client paging through its own judgments across the upgrade starts again."""

import hashlib

import django.core.validators
from django.conf import settings
from django.db import migrations, models
from django.utils.encoding import force_bytes

import annotation.models

# The salt response_handle passed to salted_hmac before this migration; the derivation is written out here so that
# this migration keeps computing what the handles were, whatever the code does later.
OLD_HANDLE_SALT = "annotation.response-handle"


def key_from_secret(secret: str) -> str:
    """The key salted_hmac(OLD_HANDLE_SALT, …, secret=secret, algorithm="sha256") keyed its HMAC with, as hex."""
    return hashlib.sha256(force_bytes(OLD_HANDLE_SALT) + force_bytes(secret)).hexdigest()


def forward(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Study.objects.update(blinding_key=key_from_secret(settings.SECRET_KEY))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0015_lc8_schema")]

    operations = [
        migrations.AddField(
            model_name="study",
            name="blinding_key",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="study",
            name="blinding_key",
            field=models.CharField(
                default=annotation.models.blinding_key_new,
                editable=False,
                help_text="The key of the reviewers' response handles: 32 bytes as hex, secret.",
                max_length=64,
                validators=[django.core.validators.RegexValidator("^[0-9a-f]{64}\\Z",
                                                                  "must be 64 lowercase hexadecimal digits")],
            ),
        ),
        migrations.AddConstraint(
            model_name="study",
            constraint=models.CheckConstraint(condition=models.Q(blinding_key__regex="^[0-9a-f]{64}$"),
                                              name="study_blinding_key_hex"),
        ),
    ]
