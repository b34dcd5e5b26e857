"""Refuse an oversized request body before anything reads it.

Django does not count file data against DATA_UPLOAD_MAX_MEMORY_SIZE, and the CSRF middleware reads
the whole multipart body (spooling files to disk) before any view runs. This middleware sits before
it and answers 413 from the Content-Length alone; the streamed copy in ``upload.py`` re-checks the
real size (a client can lie about the length or use chunked encoding).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse

MULTIPART_SLACK = 1024 * 1024  # room for multipart boundaries and the other form fields


class UploadSizeLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DPPORTAL_MAX_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit + MULTIPART_SLACK:
            message = f"the file is larger than the upload limit of {limit / (1024 * 1024):.1f} MB"
            if request.path.startswith("/api/"):
                return JsonResponse({"error": message}, status=413)
            return HttpResponse(
                f"<!doctype html><title>Upload too large</title><p>{message}. "
                f'<a href="javascript:history.back()">Back</a></p>',
                status=413,
            )
        return self.get_response(request)
