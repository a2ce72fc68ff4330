"""The site's URLs plus the toy recipe's generic pages (``pytest.mark.urls``)."""

from django.urls import include, path

from blindspot.urls import urlpatterns as site
from curation.recipes.framework.urls import patterns_for

from .toy import RECIPE

urlpatterns = [path("curate/", include(patterns_for(RECIPE))), *site]
