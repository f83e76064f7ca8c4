"""The OpenAPI schema and its docs page, and the JSON 404 for any /api/v1/ path no app claims (include last)."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import views
from api.errors import api_not_found


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI from our own static files (drf-spectacular-sidecar), its start-up script a separate file:
    the page runs under the site's CSP, which forbids inline scripts and styles and any foreign origin."""

    template_name = "exports/api_docs.html"


schema_urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
]
page_urlpatterns = [
    path("api-tokens/", views.tokens, name="api-tokens"),
    path("api-tokens/<int:token_id>/revoke", views.token_revoke, name="api-token-revoke"),
]
not_found_urlpatterns = [re_path(r"^api/v1/", api_not_found)]
