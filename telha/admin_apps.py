"""The admin app config: the steward site replaces Django's default admin site."""

from django.contrib.admin.apps import AdminConfig


class TelhaAdminConfig(AdminConfig):
    default_site = "telha.admin_site.StewardAdminSite"
