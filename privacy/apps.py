from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    """The GDPR erasure (`privacy.erasure.person_erase`, `telha gdpr_erase`)."""

    name = "privacy"
    verbose_name = "Privacy"
