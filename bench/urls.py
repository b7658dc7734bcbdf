"""The product's URLs plus the bench-only baseline endpoints (/bench/create, /bench/insert)."""

from django.urls import path

from telha.urls import urlpatterns as product_urlpatterns

from .baseline import BaselineCreateView, BaselineInsertView

urlpatterns = [
    *product_urlpatterns,
    path("bench/create", BaselineCreateView.as_view(), name="bench-create"),
    path("bench/insert", BaselineInsertView.as_view(), name="bench-insert"),
]
