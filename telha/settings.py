"""Settings for Telha clarify, read from the environment (12-factor, CONTRACT §1)."""

from pathlib import Path
from typing import Any

import environ
from csp import constants as csp
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from telha.devenv import dev_env_load

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

# `make run` writes var/dev.env once (DEBUG=1, a generated SECRET_KEY), so every process
# of the development stack and every command typed in a second shell here signs with the
# same key. Read unless DEBUG=0 is set explicitly; the environment wins (telha.devenv).
DEV_ENV_READ = dev_env_load(VAR_DIR / "dev.env")

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0.")
    SECRET_KEY = "dev-insecure-" + get_random_secret_key()

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")

INSTALLED_APPS = [
    # runserver (make run) leaves static files to whitenoise, as gunicorn does in production
    "whitenoise.runserver_nostatic",
    "telha.admin_apps.TelhaAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # swagger-ui / redoc served from our static files (offline)
    "guardian",
    "csp",  # django-csp's system checks (an outdated 3.x CSP_* setting is an error)
    "django_q",
    "telha.apps.ProjectConfig",  # the project: serve_all (what `make run` starts)
    "tenancy",
    "graph",
    "jobs",
    "ingest",
    "clarify",
    "delivery",
    "identity",
    "demo",  # the demo workspace `make run` loads (demo_setup)
    "privacy",  # the GDPR erasure (gdpr_erase)
    "events",  # the audit hash chain and signed webhooks (issue 33)
]

MIDDLEWARE = [
    "common.observability.MetricsMiddleware",  # outermost: times every request
    "common.observability.RequestIdMiddleware",
    "common.dbfail.DatabaseUnavailableMiddleware",
    "common.middleware.RequestBodyLimitMiddleware",
    "common.middleware.NulCharacterMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (CONTENT_SECURITY_POLICY below)
    "csp.middleware.CSPMiddleware",
    # Static files from the app itself (compressed, hashed names, far-future cache headers)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "telha.urls"
WSGI_APPLICATION = "telha.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'telha.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # One writer at a time: IMMEDIATE transactions queue behind the busy timeout
    # instead of failing with "database is locked"; WAL lets readers run alongside.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Prepared statements on the persistent connections: parameters bound server-side, and
    # a statement run DB_PREPARE_THRESHOLD times on a connection is prepared, so
    # PostgreSQL stops re-planning it (about half its CPU per answer). Django leaves both
    # off by default for transaction-pooling proxies (PgBouncer < 1.21): set
    # DB_PREPARED_STATEMENTS=0 behind one.
    if env.bool("DB_PREPARED_STATEMENTS", default=True):
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            server_side_binding=True,
            prepare_threshold=env.int("DB_PREPARE_THRESHOLD", default=5),
        )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    # Password sign-in of a tenant's person by email (or SCIM userName) within their
    # organisation; it ends every password attempt, so the ModelBackend below only
    # serves the sessions that name it (single sign-on, sessions from before)
    "identity.backends.PersonBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user object

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/inbox/"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# `telha collectstatic --noinput` (a deploy step) copies every app's static files here;
# whitenoise serves them under gunicorn. With DEBUG=1 (make run) they are served from the
# apps' folders as they are, with nothing collected.
STATIC_ROOT = env.str("STATIC_ROOT", default=str(VAR_DIR / "static"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "uploads"))

DATA_UPLOAD_MAX_MEMORY_SIZE = 12 * 1024 * 1024
# Bodies over these limits are refused 413 before they are read (common.middleware);
# chat hooks get the smaller one.
HOOK_MAX_BODY_BYTES = env.int("HOOK_MAX_BODY_BYTES", default=1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenancy.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenancy.auth.IsTenantCaller"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["common.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "common.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

# Content-Security-Policy (django-csp 4.x format) on every page: the inbox, sign-in, the
# steward admin, the API docs. Scripts only from our own static files (no inline script:
# /v1/docs/ is drf-spectacular's split view, which serves swagger-ui's start script as a
# file); styles also inline, as the admin's and our templates' style attributes and
# swagger-ui's injected styles need; images also as data: URLs (the admin's and
# swagger-ui's icons); no framing, no plugins, forms post only to this site.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp.SELF],
        "script-src": [csp.SELF],
        "style-src": [csp.SELF, csp.UNSAFE_INLINE],
        "img-src": [csp.SELF, "data:"],
        "font-src": [csp.SELF],
        "connect-src": [csp.SELF],
        "object-src": [csp.NONE],
        "base-uri": [csp.NONE],
        "form-action": [csp.SELF],
        "frame-ancestors": [csp.NONE],
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Telha clarify API",
    "DESCRIPTION": "Clarifications, facts, submissions and the job lease protocol.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/v1",
    # /v1/docs/ loads swagger-ui from our own static files, never a CDN: it works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.openapi.postprocess_error_responses",
    ],
}

# The job cluster (django-q2) executes our own lease queue; its own retries are off.
# `name` is the site's name and must be the same in every process: django-q2 signs task
# payloads with it (its PREFIX). A cluster started with `Q_CLUSTER_NAME=<queue>` — django-q2
# reads that variable itself — consumes that queue instead of the default one ("telha",
# which also runs the schedules); JOB_CLUSTER_FOR_AUDIENCE below routes audiences to queues.
Q_CLUSTER = {
    "name": "telha",
    "ALT_CLUSTERS": {},  # django-q2 requires the key once Q_CLUSTER_NAME names another queue
    "orm": "default",
    "workers": env.int("Q_WORKERS", default=2),
    "timeout": 120,
    "retry": 180,
    "max_attempts": 1,
    "ack_failures": True,
    "catch_up": False,
    "save_limit": 250,
    "poll": 0.5,
}

# The clarify loop (CONTRACT §1; spec §8). Tenants may override the policy parts.
CLARIFY = {
    "ENABLED": env.bool("CLARIFY_ENABLED", default=True),
    "ESCALATION_WINDOW_HOURS": env.float("CLARIFY_ESCALATION_WINDOW_HOURS", default=48.0),
    "MAX_CANDIDATES": env.int("CLARIFY_MAX_CANDIDATES", default=3),
    "PER_PERSON_DAILY_CAP": env.int("CLARIFY_PER_PERSON_DAILY_CAP", default=5),
    "DIGEST_THRESHOLD": env.int("CLARIFY_DIGEST_THRESHOLD", default=3),
    "DIGEST_WINDOW_MINUTES": env.int("CLARIFY_DIGEST_WINDOW_MINUTES", default=30),
    "QUORUM_ENABLED": env.bool("CLARIFY_QUORUM_ENABLED", default=True),
    "QUORUM_CRITICAL_REQUIRED_CONFIRMATIONS": env.int(
        "CLARIFY_QUORUM_CRITICAL_REQUIRED_CONFIRMATIONS", default=2
    ),
    "QUORUM_REQUIRED_ROLES": env.list("CLARIFY_QUORUM_REQUIRED_ROLES", default=["editor"]),
    "QUORUM_ALLOW_STEWARD_OVERRIDE": env.bool(
        "CLARIFY_QUORUM_ALLOW_STEWARD_OVERRIDE", default=True
    ),
    "SEVERITY_ELEVATE": env.dict("CLARIFY_SEVERITY_ELEVATE", default={}),
    "MIN_DETECTOR_CONFIDENCE": env.float("CLARIFY_MIN_DETECTOR_CONFIDENCE", default=0.5),
    # One reminder this long after a card (unset: none); below the escalation window
    # (checked at start-up: clarify.checks).
    "REMINDER_AFTER_HOURS": env.float("CLARIFY_REMINDER_AFTER_HOURS", default=None),
}
ASK_ENABLED = env.bool("ASK_ENABLED", default=False)
# Channel order: a person is reached on the first configured channel with their address.
CLARIFY_CHANNELS = env.list("CLARIFY_CHANNELS", default=["teams", "slack", "inbox"])
HOOK_RATE_LIMIT_PER_MINUTE = env.int("HOOK_RATE_LIMIT_PER_MINUTE", default=600)


def cache_config(url: str) -> dict[str, Any]:
    """`CACHES["default"]` for a CACHE_URL. `redis://…` is Django's own Redis cache, and a
    Redis that is down or unreachable costs a request about a second (1 s socket timeouts,
    one retry without backoff, instead of redis-py's retries with backoff); the hooks then
    answer 503 (delivery.hooks.ratelimit). Options in the URL's query
    (`?socket_timeout=2`, `?key_prefix=…`) win."""
    config: dict[str, Any] = environ.Env.cache_url_config(url)
    if url.startswith(("redis://", "rediss://")):
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        config["BACKEND"] = "django.core.cache.backends.redis.RedisCache"
        # django-environ lower-cases the query's KEY_PREFIX, TIMEOUT, … for this backend,
        # where Django reads them upper-case only.
        for name in ("KEY_PREFIX", "TIMEOUT", "VERSION", "KEY_FUNCTION"):
            if name.lower() in config:
                config[name] = config.pop(name.lower())
        options = config.setdefault("OPTIONS", {})
        options.setdefault("socket_connect_timeout", 1.0)
        options.setdefault("socket_timeout", 1.0)
        options.setdefault("retry", Retry(NoBackoff(), 1))
    return config


# State shared by every process (hook rate limits, Slack event dedupe): CACHE_URL=redis://…
# in production; the default is one process's memory.
CACHES = {"default": cache_config(env.str("CACHE_URL", default="locmemcache://telha"))}

# OpenID issuers on a loopback address (http://127.0.0.1:…, a local or stub provider):
# refused unless this is on (docs/configuration.md).
SSO_ALLOW_INSECURE_ISSUER = env.bool("SSO_ALLOW_INSECURE_ISSUER", default=DEBUG)
# How long discovery documents and JWKS of OpenID providers stay in the cache (seconds).
SSO_METADATA_CACHE_SECONDS = env.int("SSO_METADATA_CACHE_SECONDS", default=300)

# SCIM emails on the reserved `.test` domain (demo and test tenants): accepted only with
# this on (it switches email-validator's test mode on for the whole process).
SCIM_ALLOW_TEST_DOMAINS = env.bool("SCIM_ALLOW_TEST_DOMAINS", default=DEBUG)


def email_config(url: str) -> dict[str, Any]:
    """Django's EMAIL_* settings for an EMAIL_URL (django-environ's form:
    `smtp://user:pass@host:587?tls=1`, `smtp+tls://…`, `smtps://…`, `consolemail://`,
    `filemail:///path`). django-environ leaves `?tls=1`/`?ssl=1` in OPTIONS, where
    Django never reads them: they become EMAIL_USE_TLS / EMAIL_USE_SSL here."""
    config: dict[str, Any] = environ.Env.email_url_config(url)
    options = config.pop("OPTIONS", {}) or {}
    for name in ("TLS", "SSL"):
        value = str(options.pop(name, "")).strip().lower()
        if value in ("1", "true", "yes", "on"):
            config[f"EMAIL_USE_{name}"] = True
    return {key: value for key, value in config.items() if value is not None}


# The email channel (CONTRACT §1, §3.10): its server as one URL; unset, email is not a
# channel here. `make run` (DEBUG=1) prints the messages on the console instead.
EMAIL_URL = env.str("EMAIL_URL", default="consolemail://" if DEBUG else "")
if EMAIL_URL:
    globals().update(email_config(EMAIL_URL))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Telha clarify <clarify@localhost>")
EMAIL_TIMEOUT = 10  # seconds, per SMTP connection (a send is retried inside its lease)

SLACK_SIGNING_SECRET = env.str("SLACK_SIGNING_SECRET", default="")
SLACK_BOT_TOKEN = env.str("SLACK_BOT_TOKEN", default="")
SLACK_API_URL = env.str("SLACK_API_URL", default="https://slack.com/api/")
TEAMS_APP_ID = env.str("TEAMS_APP_ID", default="")
TEAMS_APP_PASSWORD = env.str("TEAMS_APP_PASSWORD", default="")
TEAMS_OPENID_METADATA_URL = env.str(
    "TEAMS_OPENID_METADATA_URL",
    default="https://login.botframework.com/v1/.well-known/openidconfiguration",
)
TEAMS_TOKEN_URL = env.str(
    "TEAMS_TOKEN_URL",
    default="https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token",
)

# Production hardening (`manage.py check --deploy` is clean with DEBUG=0).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

METRICS_ENABLED = env.bool("METRICS_ENABLED", default=False)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

LOG_FORMAT = env.str("LOG_FORMAT", default="plain" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "common.observability.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "common.observability.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# A job kind's in-process handler is registered with its policy, in one place: its
# app's AppConfig.ready (`jobs.policies.register_kind`).
# Signed webhooks (events.delivery): each attempt's read timeout, the exponential backoff
# between attempts (base doubling up to the cap) and the attempts before a message is dead.
WEBHOOKS = {
    "TIMEOUT_SECONDS": env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0),
    "BACKOFF_BASE_SECONDS": env.float("WEBHOOK_BACKOFF_BASE_SECONDS", default=30.0),
    "BACKOFF_CAP_SECONDS": env.float("WEBHOOK_BACKOFF_CAP_SECONDS", default=6 * 3600.0),
    "MAX_ATTEMPTS": env.int("WEBHOOK_MAX_ATTEMPTS", default=10),
}
JOBS_DISPATCH = env.bool("JOBS_DISPATCH", default=True)
# Which queue's cluster runs each audience's in-process worker, e.g.
# "clarify=telha-clarify,ingest=telha-ingest" (unlisted audiences: the default queue). Set
# the same value on every process, web and clusters: kicks are routed by it wherever they
# are sent, and a cluster runs only the audiences routed to it (jobs.dispatch).
JOB_CLUSTER_FOR_AUDIENCE: dict[str, str] = env.dict("JOB_CLUSTER_FOR_AUDIENCE", default={})
