"""Settings for the test suite: the production settings with test-only defaults."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-" + "x" * 40)
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from telha.settings import *  # noqa: F403
from telha.settings import CLARIFY

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
CLARIFY = {**CLARIFY}
JOBS_DISPATCH = False
