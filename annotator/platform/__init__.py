"""The platform every app stands on: projects, jobs and their worker, errors, roles, sign-in,
project scoping, stored files, the request edge, the API base and the shared view helpers.

It imports no domain (no annotation engine, no curation, no evaluation): import-linter checks it.
Its models belong to the ``annotator`` app (same label and tables); ``annotator/models.py``
imports them so they register.
"""
