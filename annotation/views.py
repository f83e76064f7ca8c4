from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import selectors


@login_required
def home(request: HttpRequest) -> HttpResponse:
    studies = selectors.studies_visible_to(user=request.user)
    return render(request, "home.html", {"studies": studies, "roles": selectors.user_roles(user=request.user)})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
