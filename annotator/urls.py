from django.urls import path

from .views import invites, jobs, projects, queues, reports, tasks, webhooks, workspace

workspace_urlpatterns = [
    path("", workspace.home, name="home"),
    path("login/", workspace.login_view, name="login"),
    path("logout/", workspace.logout_view, name="logout"),
    path("work/<int:queue_id>/", workspace.work, name="work"),
    path("work/<int:queue_id>/undo/", workspace.work_undo, name="work-undo"),
    path("work/<int:queue_id>/history/", workspace.work_history, name="work-history"),
    path("work/<int:queue_id>/progress/", workspace.work_progress, name="work-progress"),
    path("work/task/<int:task_id>/undo/", workspace.work_task_undo, name="work-task-undo"),
    path("work/task/<int:task_id>/submit/", workspace.work_submit, name="work-submit"),
    path("work/task/<int:task_id>/skip/", workspace.work_skip, name="work-skip"),
    path("work/task/<int:task_id>/report/", workspace.work_report, name="work-report"),
    path("work/task/<int:task_id>/heartbeat/", workspace.work_heartbeat, name="work-heartbeat"),
    path("work/task/<int:task_id>/release/", workspace.work_release, name="work-release"),
]

curator_urlpatterns = [
    path("curate/", projects.projects, name="curator-projects"),
    path("curate/projects/new/", projects.project_new, name="curator-project-new"),
    path("curate/projects/<int:project_id>/", projects.project_detail, name="curator-project"),
    path(
        "curate/projects/<int:project_id>/queues/new/", queues.queue_new, name="curator-queue-new"
    ),
    path(
        "curate/projects/<int:project_id>/people/",
        projects.project_people,
        name="curator-project-people",
    ),
    path(
        "curate/projects/<int:project_id>/people/<int:user_id>/remove/",
        projects.project_member_remove,
        name="curator-project-member-remove",
    ),
    path(
        "curate/projects/<int:project_id>/webhooks/",
        webhooks.webhook_list,
        name="curator-webhooks",
    ),
    path("curate/webhooks/<int:webhook_id>/", webhooks.webhook_detail, name="curator-webhook"),
    path(
        "curate/webhooks/<int:webhook_id>/test/",
        webhooks.webhook_test,
        name="curator-webhook-test",
    ),
    path(
        "curate/webhooks/<int:webhook_id>/active/",
        webhooks.webhook_active,
        name="curator-webhook-active",
    ),
    path(
        "curate/webhooks/<int:webhook_id>/secret/",
        webhooks.webhook_secret,
        name="curator-webhook-secret",
    ),
    path(
        "curate/webhooks/<int:webhook_id>/delete/",
        webhooks.webhook_delete,
        name="curator-webhook-delete",
    ),
    path("curate/queues/<int:queue_id>/", queues.queue_detail, name="curator-queue"),
    path("curate/queues/<int:queue_id>/edit/", queues.queue_edit, name="curator-queue-edit"),
    path("curate/queues/<int:queue_id>/status/", queues.queue_status, name="curator-queue-status"),
    path("curate/queues/<int:queue_id>/upload/", queues.queue_upload, name="curator-queue-upload"),
    path(
        "curate/queues/<int:queue_id>/tasks/cancel/",
        queues.queue_tasks_cancel,
        name="curator-queue-tasks-cancel",
    ),
    path(
        "curate/queues/<int:queue_id>/disagreements/",
        tasks.queue_disagreements,
        name="curator-queue-disagreements",
    ),
    path("curate/queues/<int:queue_id>/tasks/", tasks.queue_tasks, name="curator-queue-tasks"),
    path(
        "curate/queues/<int:queue_id>/tasks/settle/",
        tasks.queue_tasks_settle,
        name="curator-queue-tasks-settle",
    ),
    path("curate/tasks/<int:task_id>/", tasks.task_detail, name="curator-task"),
    path("curate/tasks/<int:task_id>/settle/", tasks.task_settle, name="curator-task-settle"),
    path(
        "curate/tasks/<int:task_id>/send-back/",
        tasks.task_send_back,
        name="curator-task-send-back",
    ),
    path(
        "curate/projects/<int:project_id>/reports/",
        reports.project_reports,
        name="curator-project-reports",
    ),
    path(
        "curate/reports/<int:report_id>/handle/",
        reports.report_handle,
        name="curator-report-handle",
    ),
    path(
        "curate/enrollments/<int:enrollment_id>/resume/",
        queues.enrollment_resume,
        name="curator-enrollment-resume",
    ),
    path("curate/invites/", invites.invites, name="curator-invites"),
    path("invite/<str:token>/", invites.invite_accept, name="invite-accept"),
    path("account/token/", invites.token, name="token"),
    path("jobs/", jobs.jobs, name="curator-jobs"),
    path("jobs/<int:job_id>/", jobs.job_detail, name="curator-job"),
    path("jobs/<int:job_id>/retry/", jobs.job_retry, name="curator-job-retry"),
]

urlpatterns = [*workspace_urlpatterns, *curator_urlpatterns]
