from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "delivery"
    verbose_name = "Delivery"
    default_auto_field = "django.db.models.BigAutoField"
