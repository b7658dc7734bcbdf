"""URL configuration: the API under /v1/, hooks, the admin, the inbox, health."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from clarify.api import views as clarify_views
from common import error_views
from delivery import documents
from delivery.email import views as email_views
from delivery.inbox import away
from delivery.inbox import views as inbox
from graph.api import views as graph_views
from identity.sso import SignInView
from identity.urls import scim_v2, sso_urls
from ingest.api import views as ingest_views
from ingest.api.documents import DocumentUploadView
from jobs.api import views as job_views
from telha.health import healthz
from telha.metrics import metrics

api_v1 = [
    path("submissions", ingest_views.SubmissionView.as_view(), name="submissions"),
    path("documents", DocumentUploadView.as_view(), name="documents"),
    path("nodes/<str:node_id>", graph_views.NodeView.as_view(), name="node"),
    path("nodes/<str:node_id>/history", graph_views.NodeHistoryView.as_view(), name="node-history"),
    path("query", graph_views.QueryView.as_view(), name="query"),
    path("clarifications", clarify_views.ClarificationListView.as_view(), name="clarifications"),
    path(
        "clarifications/<str:clarification_id>",
        clarify_views.ClarificationDetailView.as_view(),
        name="clarification",
    ),
    path(
        "clarifications/<str:clarification_id>/answer",
        clarify_views.ClarificationAnswerView.as_view(),
        name="clarification-answer",
    ),
    path("jobs/lease", job_views.LeaseView.as_view(), name="jobs-lease"),
    path("jobs/<str:job_id>/heartbeat", job_views.HeartbeatView.as_view(), name="jobs-heartbeat"),
    path("jobs/<str:job_id>/complete", job_views.CompleteView.as_view(), name="jobs-complete"),
    path("jobs/<str:job_id>/fail", job_views.FailView.as_view(), name="jobs-fail"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves swagger-ui's start script as a file (`?script`), not inline:
    # the Content-Security-Policy allows no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="docs"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("sso/", include(sso_urls)),
    path("inbox/", inbox.inbox, name="inbox"),
    path("inbox/answer", inbox.answer, name="inbox-answer"),
    path("inbox/away/", away.away, name="inbox-away"),
    path("inbox/ask/", inbox.ask, name="inbox-ask"),
    path("inbox/ask/now", inbox.ask_now_view, name="inbox-ask-now"),
    path("inbox/facts/<str:node_id>/", inbox.fact, name="inbox-fact"),
    path("inbox/documents/<str:source_id>/", documents.document, name="inbox-document"),
    path("email/answer/<str:nonce>/<str:choice>/", email_views.answer, name="email-answer"),
    path("", RedirectView.as_view(url="/inbox/", permanent=False)),
    path("hooks/", include("delivery.urls")),
    path("scim/v2/", include(scim_v2)),
    # Whatever no route above serves under these prefixes: the contract's 404 body.
    re_path(r"^(?:v1|hooks|scim)/", error_views.unmatched),
]

# Errors outside DRF's views: JSON on /v1/ and /hooks/, Django's pages elsewhere.
handler400 = "common.error_views.bad_request"
handler403 = "common.error_views.permission_denied"
handler404 = "common.error_views.page_not_found"
handler500 = "common.error_views.server_error"
