"""VisIT-Bench recipe (visit-bench.txt Sec. 2–4, App. C–F): instruction families, crowd-written
instructions and instruction-conditioned captions, LLM references people verify, forced-choice
A/B ratings fed to the evaluation app, and a living leaderboard judged by the LLM judge.

``recipe.py`` declares it on the recipe framework (``apps.py``'s config imports it once apps
are ready); ``models.py`` holds its tables. Nothing is imported here: models load first.
"""
