from django.apps import AppConfig


class IdentityConfig(AppConfig):
    """Enterprise identity: SCIM 2.0 provisioning and OpenID Connect sign-in per tenant."""

    name = "identity"
    verbose_name = "Identity provider"

    def ready(self) -> None:
        # scim2-models checks `emails.value` with email-validator, which refuses the
        # reserved `.test` domain every demo and test tenant uses; Django's validator (the
        # workspace file's) accepts it. SCIM_ALLOW_TEST_DOMAINS (default: DEBUG) lets
        # email-validator accept it too; it is process-wide, hence off in production.
        # No deliverability check is ever made.
        from django.conf import settings

        if settings.SCIM_ALLOW_TEST_DOMAINS:
            import email_validator

            email_validator.TEST_ENVIRONMENT = True
