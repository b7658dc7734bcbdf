"""Settings for the test suite: the production settings with test-only defaults."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-" + "x" * 40)
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from telha.settings import *  # noqa: F403
from telha.settings import CLARIFY, STORAGES

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
CLARIFY = {**CLARIFY}
JOBS_DISPATCH = False
SCIM_ALLOW_TEST_DOMAINS = True  # every test tenant's people are on `.test`
SSO_ALLOW_INSECURE_ISSUER = True  # the OpenID stub provider serves http on 127.0.0.1
# Static files from the apps' folders, as with DEBUG=1: nothing collected before a test
# (the production tests run `telha collectstatic` themselves; tests/test_production.py).
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
