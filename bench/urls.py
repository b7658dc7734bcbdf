"""The product's URLs plus the bench-only baseline endpoint at /bench/insert."""

from django.urls import path

from telha.urls import urlpatterns as product_urlpatterns

from .baseline import BaselineInsertView

urlpatterns = [
    *product_urlpatterns,
    path("bench/insert", BaselineInsertView.as_view(), name="bench-insert"),
]
