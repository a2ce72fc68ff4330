from .views import curator, workspace

urlpatterns = [*workspace.urlpatterns, *curator.urlpatterns]
