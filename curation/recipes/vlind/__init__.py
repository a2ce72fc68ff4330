"""VLind-Bench recipe (vlind-bench.txt Sec. 3–4, App. A–C): LLM-drafted counterfactual triples,
three reviewers per triple and per image, counterfactual and factual images, VP nouns, and the
CK / VP / CB / LP test set in the published ``data.json`` layout.

``recipe.py`` declares it on the recipe framework (``apps.py``'s config imports it once apps
are ready); ``models.py`` holds its tables. Nothing is imported here: models load first.
"""
