"""Django admin for projects and people.

Edits made here take effect like those of the People page: after an admin saves a user (their
groups, i.e. roles, or the active flag) or a project's members, the person's live leases end
wherever they may no longer work (``services.annotator_leases_revoke``), so the tasks go back
to the pool at once. The hook is the admin's own ``save_related`` (called after the
many-to-many fields are saved), not a signal: domain flow is called explicitly.
"""

from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import get_user_model

from . import services
from .platform.admin import StampsLastAdmin
from .platform.models import Project

User = get_user_model()


@admin.register(Project)
class ProjectAdmin(StampsLastAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    filter_horizontal = ("members",)

    def save_related(self, request, form, formsets, change):
        before = set(form.instance.members.values_list("pk", flat=True)) if change else set()
        super().save_related(request, form, formsets, change)
        after = set(form.instance.members.values_list("pk", flat=True))
        for person in User.objects.filter(pk__in=before - after):
            services.annotator_leases_revoke(annotator=person)


if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class UserAdmin(auth_admin.UserAdmin):
    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if change:
            # Groups are saved by now: a lost crowdworker role or a deactivated account ends
            # the person's leases everywhere.
            services.annotator_leases_revoke(annotator=form.instance)

    # Deleting an account deletes its assignments: their slots are returned first, or the
    # tasks would count leases that no longer exist.
    def delete_model(self, request, obj):
        services.annotator_leases_revoke(annotator=obj, everywhere=True)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for person in queryset:
            services.annotator_leases_revoke(annotator=person, everywhere=True)
        super().delete_queryset(request, queryset)
