"""What every app's Django admin shares (``annotator.platform`` is no app: nothing autodiscovers
this module; the apps' ``admin`` modules import from it)."""

from django.contrib import admin

# The stamps the platform's abstract models give a row (``CreatedStamp``, ``JobStamp``).
STAMPS = ("job", "created_by")


class StampsLastAdmin(admin.ModelAdmin):
    """An admin whose form lists a row's stamps after its own editable fields (and before the
    read-only ones). Inherited fields come first in a model's field order, so a form left to
    itself would open with who made the row."""

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        readonly = set(self.get_readonly_fields(request, obj))
        editable = [f for f in fields if f not in readonly]
        own = [f for f in editable if f not in STAMPS]
        stamps = [f for f in STAMPS if f in editable]
        return [*own, *stamps, *(f for f in fields if f in readonly)]
