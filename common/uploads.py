"""The size limits of uploaded files: an API request's body (DATA_UPLOAD_MAX_MEMORY_SIZE), the judgments import's
file (JUDGMENTS_IMPORT_MAX_SIZE) and a page's file (the people page's accounts CSV, a study's conversations), and
what Django keeps of an upload.

Django keeps an uploaded file in memory up to FILE_UPLOAD_MAX_MEMORY_SIZE and in a temporary file past it, so its
size is known before a byte of it is read: a file over its limit is refused by its size, naming both, and is never
read into memory. (Django's DATA_UPLOAD_MAX_MEMORY_SIZE bounds a form's other fields, not its files.) The temporary
file (``KeptUploadHandler``) keeps one byte past the largest limit and counts the rest: a form is parsed before its
view runs (the CSRF check reads it), so an upload of any size would otherwise be written whole to the disk."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler

MIB = 1024 * 1024


def body_limit() -> int:
    """The largest API request body, in bytes (Django's None, no limit, is taken as the default, 64 MiB)."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 64 * MIB


def import_limit() -> int:
    """The largest file of the judgments import, in bytes (JUDGMENTS_IMPORT_MAX_SIZE): larger than a body, since the
    file is imported whole, and it is streamed to a temporary file, never held in memory."""
    return settings.JUDGMENTS_IMPORT_MAX_SIZE


def _kept() -> int:
    """The bytes an upload's temporary file keeps: one past the largest limit of any path."""
    return max(body_limit(), settings.CONVERSATIONS_UPLOAD_MAX_SIZE, settings.ACCOUNTS_CSV_MAX_SIZE) + 1


class KeptUploadHandler(TemporaryFileUploadHandler):
    """Django's temporary file of an upload, with at most one byte past the largest limit of any path written to it;
    its ``size`` is still the whole file's (Django counts every byte received), which a refusal names. A file cut so
    is closed (its temporary file gone): a path that read it without checking its size would fail loudly, never read
    a cut file as if it were whole."""

    def kept(self) -> int:
        return _kept()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        kept = self.kept() - start
        if kept > 0:
            self.file.write(raw_data[:kept])

    def file_complete(self, file_size: int) -> UploadedFile | None:
        upload = super().file_complete(file_size)
        if upload is not None and file_size > self.kept():
            upload.close()
        return upload


class ImportUploadHandler(KeptUploadHandler):
    """The judgments import's file: kept up to one byte past its own limit (``import_limit``). Only the import's
    parser uses it, so no other form's file is written to the disk past the limits above."""

    def kept(self) -> int:
        return import_limit() + 1


def size_said(size: int) -> str:
    """``16 MiB (16,777,216 bytes)`` for a whole number of MiB, else ``1,500 bytes``."""
    return f"{size // MIB} MiB ({size:,} bytes)" if size and size % MIB == 0 else f"{size:,} bytes"


def upload_size_check(upload: UploadedFile, limit: int, *, larger: str = "") -> None:
    """The form's refusal of a file over ``limit`` bytes, with both sizes; ``larger`` says where a larger file
    goes instead."""
    size = upload.size or 0
    if size > limit:
        raise forms.ValidationError(f"at most {size_said(limit)} here; this file is {size:,} bytes.{larger}")
