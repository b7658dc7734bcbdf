"""Settings for the benchmarks: the production settings (DEBUG=0) plus the bench-only
baseline endpoint. `DATABASE_URL` is set by `bench._support` before this is imported."""

import os

os.environ["DEBUG"] = "0"
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-" + "b" * 40)
# Plain HTTP on 127.0.0.1 (no TLS proxy in front); everything else stays production-like.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")

from telha.settings import *  # noqa: F403

ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "bench.urls"

# The bench app: the idiomatic baseline's model (its table is created by the benchmark).
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]  # noqa: F405
# Static files as they are in the apps (nothing collected before a benchmark).
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
