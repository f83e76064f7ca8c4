"""The size limit of a file uploaded through a page's form (the people page's accounts CSV, a study's conversations).

Django keeps an uploaded file in memory up to FILE_UPLOAD_MAX_MEMORY_SIZE and in a temporary file past it, so its
size is known before a byte of it is read: a file over its page's limit is refused by its size, naming both, and is
never read into memory. (DATA_UPLOAD_MAX_MEMORY_SIZE bounds a form's other fields, not its files.)"""

from __future__ import annotations

from django import forms
from django.core.files.uploadedfile import UploadedFile

MIB = 1024 * 1024


def size_said(size: int) -> str:
    """``16 MiB (16,777,216 bytes)`` for a whole number of MiB, else ``1,500 bytes``."""
    return f"{size // MIB} MiB ({size:,} bytes)" if size and size % MIB == 0 else f"{size:,} bytes"


def upload_size_check(upload: UploadedFile, limit: int, *, larger: str = "") -> None:
    """The form's refusal of a file over ``limit`` bytes, with both sizes; ``larger`` says where a larger file
    goes instead."""
    size = upload.size or 0
    if size > limit:
        raise forms.ValidationError(f"at most {size_said(limit)} here; this file is {size:,} bytes.{larger}")
